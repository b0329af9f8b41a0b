"""The measurement methods: one package each, one shape (methods.base), one registry."""
