"""What the methods share, below them (nothing here imports a method or the registry):
starting and resuming an experiment on a testbed (``lab``), loads in bit/s or as shares
(``rates``), the frame-size and scale series (``sizes``, ``scale``, ``series``) and their
figures, the figure jobs a report draws (``render``, ``textcache``, ``plots``), the
host's newest doctor result that later experiments carry (``doctor_reference``), and
what two methods share, so that no method imports another: the sweep of loads a search
verifies with (``sweep_run``, ``sweep_plan``, ``sweep_analyse``, ``sweep_latency``), the
per-direction, IMIX and data-plane counts their views show (``directions``,
``imix_sizes``, ``dataplane_counters``), a flood stored as a trial (``flood_record``), the
rtt probe's parts (``probe_run``), iperf3's JSON (``iperf3_json``)."""
