"""The model zoo: models written the way public notebooks, bambi's docs and users
write them, each run through every public function on known posterior draws."""

from tests.zoo import dims, forms, frontends, generic, glm, hierarchical, notebooks

ZOO_MODULES = (glm, generic, hierarchical, forms, frontends, dims, notebooks)
