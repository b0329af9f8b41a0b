"""Schema of the netassay store and its recorded migrations.

Each migration is applied once, in order, inside a transaction, and recorded in
``schema_migrations``. Never edit a shipped migration: add a new one.
"""

from __future__ import annotations

MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        "experiments and append-only trials",
        """
        CREATE TABLE experiments (
            id INTEGER PRIMARY KEY,
            key TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL,
            source TEXT NOT NULL,
            label TEXT NOT NULL,
            created_utc TEXT NOT NULL,
            tool_version TEXT NOT NULL,
            config_json TEXT NOT NULL,
            metadata_json TEXT NOT NULL,
            environment_json TEXT NOT NULL
        );
        CREATE TABLE trials (
            id INTEGER PRIMARY KEY,
            experiment_id INTEGER NOT NULL REFERENCES experiments(id),
            load_index INTEGER NOT NULL,
            repetition INTEGER NOT NULL,
            rate_pps REAL NOT NULL,
            duration_s REAL NOT NULL,
            sent INTEGER NOT NULL,
            received INTEGER NOT NULL,
            achieved_rate_pps REAL,
            loss_location_json TEXT NOT NULL DEFAULT '{}',
            counters_json TEXT NOT NULL DEFAULT '{}',
            warnings_json TEXT NOT NULL DEFAULT '[]',
            source TEXT NOT NULL,
            utc TEXT NOT NULL,
            tool_version TEXT NOT NULL,
            UNIQUE (experiment_id, load_index, repetition)
        );
        CREATE INDEX trials_curve
            ON trials (experiment_id, load_index, repetition, rate_pps, sent, received);
        CREATE INDEX trials_warned ON trials (experiment_id) WHERE warnings_json != '[]';
        CREATE TRIGGER trials_append_only_update BEFORE UPDATE ON trials
        BEGIN SELECT RAISE(ABORT, 'trials are append-only'); END;
        CREATE TRIGGER trials_append_only_delete BEFORE DELETE ON trials
        BEGIN SELECT RAISE(ABORT, 'trials are append-only'); END;
        """,
    ),
    (
        2,
        "trials: why a trial is left out of the statistics, the test frames the sink "
        "dropped after the SUT forwarded them, and the run (environment) they belong to",
        """
        CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            experiment_id INTEGER NOT NULL REFERENCES experiments(id),
            started_utc TEXT NOT NULL,
            resumed INTEGER NOT NULL,
            environment_json TEXT NOT NULL
        );
        CREATE INDEX runs_experiment ON runs (experiment_id);
        ALTER TABLE trials ADD COLUMN run_id INTEGER REFERENCES runs(id);
        ALTER TABLE trials ADD COLUMN excluded TEXT;
        ALTER TABLE trials ADD COLUMN sink_dropped INTEGER NOT NULL DEFAULT 0;
        DROP TRIGGER trials_append_only_update;
        UPDATE trials SET excluded = netassay_exclusion(warnings_json)
            WHERE warnings_json != '[]';
        CREATE TRIGGER trials_append_only_update BEFORE UPDATE ON trials
        BEGIN SELECT RAISE(ABORT, 'trials are append-only'); END;
        DROP INDEX trials_curve;
        CREATE INDEX trials_curve ON trials
            (experiment_id, load_index, repetition, rate_pps, sent, received, sink_dropped,
             excluded);
        """,
    ),
    (
        3,
        "rtt runs: per run of 'netassay rtt' (stored as a trial), the histograms of its "
        "segments, a bounded sample of its raw probes and its summary (percentiles, CPU "
        "use per core, the background load that ran)",
        """
        CREATE TABLE rtt_runs (
            trial_id INTEGER PRIMARY KEY REFERENCES trials(id),
            summary_json TEXT NOT NULL,
            histograms BLOB NOT NULL,
            probes BLOB
        );
        CREATE TRIGGER rtt_runs_append_only_update BEFORE UPDATE ON rtt_runs
        BEGIN SELECT RAISE(ABORT, 'rtt runs are append-only'); END;
        CREATE TRIGGER rtt_runs_append_only_delete BEFORE DELETE ON rtt_runs
        BEGIN SELECT RAISE(ABORT, 'rtt runs are append-only'); END;
        """,
    ),
    (
        4,
        "campaigns (name, the seed of their run order, the file as resolved), and per-core "
        "CPU use (from /proc/stat, steal included) with every trial",
        """
        CREATE TABLE campaigns (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            created_utc TEXT NOT NULL,
            tool_version TEXT NOT NULL,
            seed INTEGER NOT NULL,
            spec_json TEXT NOT NULL
        );
        ALTER TABLE trials ADD COLUMN cpu_json TEXT NOT NULL DEFAULT '{}';
        """,
    ),
    (
        5,
        "acceptance tests (netassay accept, iperf3 and MonIPE imports): an experiment of "
        "kind 'accept' with its runs (ramp steps and sustained runs), each run's receiver "
        "intervals and its CPU samples per core",
        """
        CREATE TABLE accept_runs (
            id INTEGER PRIMARY KEY,
            experiment_id INTEGER NOT NULL REFERENCES experiments(id),
            phase TEXT NOT NULL,
            run_index INTEGER NOT NULL,
            tool TEXT NOT NULL,
            tool_version TEXT,
            offered_bps REAL,
            datagram_bytes INTEGER,
            ip_version INTEGER NOT NULL,
            duration_s REAL NOT NULL,
            sent_packets INTEGER,
            received_packets INTEGER,
            lost_packets INTEGER,
            reordered INTEGER,
            duplicates INTEGER,
            received_bytes INTEGER,
            received_s REAL,
            sent_bytes INTEGER,
            intervals_side TEXT NOT NULL,
            host_json TEXT NOT NULL DEFAULT '{}',
            extra_json TEXT NOT NULL DEFAULT '{}',
            raw TEXT,
            UNIQUE (experiment_id, phase, run_index)
        );
        CREATE TABLE accept_intervals (
            run_id INTEGER NOT NULL REFERENCES accept_runs(id),
            seq INTEGER NOT NULL,
            start_s REAL NOT NULL,
            end_s REAL NOT NULL,
            bytes INTEGER NOT NULL,
            packets INTEGER,
            lost INTEGER,
            PRIMARY KEY (run_id, seq)
        ) WITHOUT ROWID;
        CREATE TABLE accept_cpu (
            run_id INTEGER NOT NULL REFERENCES accept_runs(id),
            seq INTEGER NOT NULL,
            t_s REAL NOT NULL,
            cores_json TEXT NOT NULL,
            PRIMARY KEY (run_id, seq)
        ) WITHOUT ROWID;
        CREATE TRIGGER accept_runs_append_only_update BEFORE UPDATE ON accept_runs
        BEGIN SELECT RAISE(ABORT, 'accept runs are append-only'); END;
        CREATE TRIGGER accept_runs_append_only_delete BEFORE DELETE ON accept_runs
        BEGIN SELECT RAISE(ABORT, 'accept runs are append-only'); END;
        CREATE TRIGGER accept_intervals_append_only_update BEFORE UPDATE ON accept_intervals
        BEGIN SELECT RAISE(ABORT, 'accept intervals are append-only'); END;
        CREATE TRIGGER accept_intervals_append_only_delete BEFORE DELETE ON accept_intervals
        BEGIN SELECT RAISE(ABORT, 'accept intervals are append-only'); END;
        CREATE TRIGGER accept_cpu_append_only_update BEFORE UPDATE ON accept_cpu
        BEGIN SELECT RAISE(ABORT, 'accept CPU samples are append-only'); END;
        CREATE TRIGGER accept_cpu_append_only_delete BEFORE DELETE ON accept_cpu
        BEGIN SELECT RAISE(ABORT, 'accept CPU samples are append-only'); END;
        """,
    ),
    (
        6,
        "trials that received more than they sent beyond what foreign frames explain "
        "(10 ppm of sent) are counter faults: named in their warnings and excluded",
        """
        DROP TRIGGER trials_append_only_update;
        UPDATE trials SET
            warnings_json = json_insert(warnings_json, '$[#]',
                'counter fault: received ' || received || ' > sent ' || sent
                || ' (by ' || (received - sent) || '): more than foreign frames explain;'
                || ' not SUT loss')
            WHERE received - sent > sent * 1e-5 AND excluded IS NULL;
        UPDATE trials SET excluded = netassay_exclusion(warnings_json)
            WHERE received - sent > sent * 1e-5;
        CREATE TRIGGER trials_append_only_update BEFORE UPDATE ON trials
        BEGIN SELECT RAISE(ABORT, 'trials are append-only'); END;
        """,
    ),
]

# the newest migration this netassay knows (the list is kept in version order)
SCHEMA_VERSION = max(version for version, _, _ in MIGRATIONS)
