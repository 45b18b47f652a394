"""State stores of the engine: byte stores, and the layers stacked over them."""
