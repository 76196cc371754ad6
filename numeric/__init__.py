"""numpy/scipy kernels generated from the symbolic layer: the moment ODE of eq. (7) and its integrators, ReLU and Riccati tools, attention fields, equilibria and their classification."""
