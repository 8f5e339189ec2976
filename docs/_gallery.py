"""The gallery's settings that sphinx-gallery imports by name."""


def quick(gallery_conf, script_vars):
    """Run every example with ``--quick``: the small sizes it documents."""
    return ["--quick"]


def fork_samplers(gallery_conf, fname):
    """Let ``pm.sample`` start its chains' processes by forking.

    The gallery's worker processes default to joblib's start method, which cannot
    pickle what PyMC hands to its chains.
    """
    import multiprocessing

    multiprocessing.set_start_method("fork", force=True)
