"""The doctor: can this host measure, and up to what? (``methods.doctor.method``)."""
