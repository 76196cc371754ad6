"""torch kernels: batched simulation of the gaussian and attention flows, adaptive integrators, and the KPFlow operators (P, P*, K, PKP*) of recurrent cells, matrix-free in float64."""
