"""What the methods share, below them (nothing here imports a method or the registry):
starting and resuming an experiment on a testbed (``lab``), loads in bit/s or as shares
(``rates``), the frame-size and scale series (``sizes``, ``scale``, ``series``) and their
figures, the figure jobs a report draws (``render``, ``textcache``, ``plots``), and the
host's newest doctor result that later experiments carry (``doctor_reference``)."""
