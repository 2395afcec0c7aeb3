"""The GP surrogate: kernel specs that compose with ``+`` (the kernels package), their options, ESP products, the Shapley posterior, priors, MAP fits, kernel choice and the mixture."""
