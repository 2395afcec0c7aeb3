"""The Hamming-kernel GP surrogate: ESP products, the Shapley posterior, priors, MAP fits, kernel choice and the mixture."""
