package config

// Example returns a sample pipeline.yaml in which every field is explained:
// a "trips" stream of JSON events with a count, a sum, a mean, a histogram
// and a density release. It parses cleanly; the README and `dpstream run --help`
// point to it, and testdata/config/pipeline.yaml holds the same text.
func Example() string { return example }

const example = `# dpstream pipeline configuration: a sample with every field explained.
#
# dpstream checks the whole file before anything runs and reports every
# mistake with its line. Unknown keys are errors, so a typo never falls back
# to a default silently. Durations are Go durations: 90s, 2m, 1h30m, 24h
# (there is no day unit). Relative paths are resolved as noted per field.
#
# What is protected: every guarantee below is about one privacy unit (here a
# rider). Adding or removing ALL of one rider's events changes the
# distribution of everything dpstream publishes by at most the budget's
# epsilon and delta. dpstream enforces the bounds this rests on
# (contribution.max_events_per_window and each release's bounds) whatever
# producers send.

# Kafka bootstrap brokers, as host:port. Leave the list empty (or leave the key
# out) to run an embedded Kafka-protocol broker inside dpstream: one command
# then runs the whole pipeline on one machine, and any Kafka client can
# connect to it. To use a cluster: brokers: [kafka-1:9092, kafka-2:9092]
brokers: []

# The embedded broker; ignored when brokers are given.
embedded:
  # host:port it listens on (default 127.0.0.1:9092; port 0 picks a free
  # port). Keep it on loopback: the input topics hold raw, identifying events.
  addr: 127.0.0.1:9092
  # Directory for its data, relative to the working directory
  # (default .dpstream/kafka).
  data_dir: .dpstream/kafka
  # fsync every write before acknowledging it (default true), so that a
  # machine crash does not lose the ledger's tail; false is faster.
  sync: true

# Internal topics; the defaults are shown. Every name must differ from the
# others and from every stream's input topic.
topics:
  # Partial statistics, from the accumulate stage to the release stage.
  partials: dpstream.partials
  # The private releases: the only output meant for the public.
  releases: dpstream.releases
  # Append-only budget charges, each with its release's full payload; the
  # releases topic is republished from it after a crash.
  ledger: dpstream.ledger
  # Latest budget state per stream (compacted), for operators.
  accountant: dpstream.accountant
  # RESTRICTED: per-instance DP certificates. They depend on the data, so
  # this topic must be readable by operators only, never by the public.
  pdp: dpstream.pdp
  # Input events that could not be used (undecodable, invalid, too late),
  # each with its reason. It holds raw events: restrict it like the input.
  deadletter: dpstream.deadletter
  # Prediction releases only (created when a release answers queries):
  # queries in, each {request_id, stream, release, features}; they are the
  # queriers' own input.
  requests: dpstream.predict.requests
  # Their private answers, keyed by request_id; each noisy answer is in the
  # ledger before it is published here.
  responses: dpstream.predict.responses

# Prometheus metrics, served on /metrics (with the /healthz and /readyz
# probes) at this host:port; default 127.0.0.1:9464, this machine only.
# Most metrics are exact counts of the input, served without
# authentication: bind another address (":9464" in a container) only where
# Prometheus must scrape across a network, and let only Prometheus connect.
# Set addr: off (or addr: "") to disable the endpoint.
metrics:
  addr: "127.0.0.1:9464"
  # Also serve the restricted per-instance DP gauges (dpstream_pdp_*),
  # which depend on the data like the pdp topic (default false).
  pdp: false

# Prefix of the Kafka consumer group names dpstream uses (default dpstream).
# Two pipelines on one cluster need different prefixes.
group: dpstream

# Consumer-group session timeout (default 10s): how long a process that
# died without leaving keeps its partitions before another takes them over.
# A clean stop leaves at once. The broker bounds it
# (group.min.session.timeout.ms, 6s by default).
session_timeout: 10s

# RESTRICTED: directory where the release stage keeps every privacy unit's
# cumulative per-instance DP account on disk (default .dpstream/pdp,
# relative to the working directory), so that its memory does not grow
# with the number of units. It is a cache of the pdp topic, rebuilt from it
# when missing; it holds the same data-dependent values, so restrict it
# like the pdp topic (dpstream creates it 0700, its files 0600).
pdp_store: .dpstream/pdp

# Partitions of the partials and ledger topics when dpstream creates them
# (default 4): the streams are sharded by them, each partition's streams
# owned by one release instance at a time (fenced in its ledger
# partition), so up to this many release instances share the streams.
# Topics that exist keep their partition count.
release_partitions: 4

# The input streams: at least one. Names and input topics must be unique.
streams:
  - # Name of the stream: 1 to 128 of a-z A-Z 0-9 . _ - (it appears in
    # release ids, record keys and metric labels).
    name: trips
    # Input topic. Producers should key each record by the privacy unit.
    topic: trips.events
    # Partitions to create the input topic with if it does not exist
    # (default 4). An existing topic is used as it is. Partitions are the
    # unit of scale-out: at most this many accumulate instances share the work.
    partitions: 4
    # Record format, one of:
    #   json            one JSON object per record
    #   avro            Avro binary, with the schema below
    #   confluent-avro  Confluent wire format: magic byte 0, 4-byte schema id,
    #                   then Avro binary, with the schema below
    format: json
    # Avro schema file (.avsc): required for avro and confluent-avro, not
    # allowed with json. A relative path is resolved from the directory of
    # this file. For example:
    #   schema: schema/trip.avsc
    # confluent-avro only: the schema id every record must carry; 0 or
    # absent accepts any id. For example:
    #   schema_id: 42
    # The largest record value accepted, in bytes (default 1048576 = 1 MiB,
    # at most 15728640 = 15 MiB). A larger record is dead-lettered as
    # too_large, without its value. For example:
    #   max_event_bytes: 4194304
    # The field that identifies the person the guarantee protects. Required.
    # The special value "event" makes each event its own unit (event-level
    # privacy), which protects much less when people send many events.
    privacy_unit: rider_id
    # The field holding the event time. Leave it out, or write
    # record_timestamp, to use the Kafka record timestamp instead.
    event_time: ts
    # Where the stream's release schedule begins (RFC 3339, aligned down to
    # a window boundary). Every window from the start on is released once,
    # after its end plus grace has passed on the wall clock, and charged,
    # whether or not it held events; earlier windows never are, and events
    # before the start are dead-lettered as before_start. Leave it out to
    # begin at the window holding the wall clock when the pipeline first
    # runs (recorded in the ledger). Set it, before the first run, to
    # release a backfill. For example:
    #   start: 2025-06-01T00:00:00Z
    # Tumbling event-time windows [start, start+size), aligned to the Unix
    # epoch. Every release is computed once per window.
    window:
      # Window length, > 0. Required.
      size: 1h
      # Lateness tolerated: a partition's watermark is the highest event time
      # seen minus grace, and a window closes when the watermark passes its
      # end. Later events are dropped and sent to the dead-letter topic.
      # Default 0.
      grace: 2m
      # With no input on a partition for this long, wall-clock time advances
      # its watermark, so windows still close when a stream goes quiet.
      # Default 30s.
      idle_timeout: 30s
      # How far an event time may lead the wall clock. A later event is
      # dead-lettered as future and moves nothing; no watermark passes the
      # wall clock minus grace, so no event time can close a window early.
      # Default 1m.
      max_skew: 1m
    # Per-unit contribution bounds, enforced by dpstream.
    contribution:
      # At most this many events of one rider are used per window (the first
      # ones by offset; the rest are dropped and counted). Every release's
      # sensitivity, and so its noise, grows in proportion. Required, >= 1.
      max_events_per_window: 4
      # With continual releases (continual: {horizon: T}): in each horizon
      # a rider's events are kept in at most this many windows (the first
      # ones by offset; later windows' events are dropped and counted), so
      # the running totals need less noise. Optional, >= 1.
      # max_windows: 24
    # The stream's privacy budget. The accountant composes the loss of every
    # release in every window (Renyi DP) and refuses a release that would go
    # past it; such a release is published with status budget_exhausted and
    # no data. ` + "`dpstream explain`" + ` shows how many windows the budget lasts.
    budget:
      # Total epsilon, > 0. Required.
      epsilon: 10
      # Total delta, in (0, 1); well below 1/(number of riders). Required.
      delta: 1e-6
      # The budget renews every period: a multiple of window.size. Leave it
      # out for one budget over the stream's whole lifetime. A renewing
      # budget bounds the loss per period only: over many periods a rider's
      # total loss adds up.
      per: 24h
      # With a prediction release (kind: prediction), the share of each
      # period's epsilon its answers to queries may spend, so that queries
      # never starve the releases (queries: 2). Leave it out to let answers
      # spend the whole budget.
    # Per-instance DP certificates (default true): how much each rider
    # actually lost, written to the RESTRICTED pdp topic (see topics.pdp).
    # false saves the per-rider bookkeeping; releases are the same.
    pdp: true
    # The releases computed on every window: at least one. Each has:
    #   name     unique within the stream (same characters as a stream name)
    #   kind     count | sum | mean | histogram | density
    #   field    the numeric event field (every kind but count)
    #   bounds   [lo, hi], lo < hi: values are clamped to this range before
    #            use (every kind but count); the noise of sums and means
    #            grows with hi - lo
    #   bins     histogram only: equal-width bins over bounds, 1..10000
    #   terms    density only: cosine terms, 1..1024, or auto (then
    #            expected_events is required and smoothness optional)
    #   expected_events  terms: auto only: the kept events per window you
    #            expect, declared in advance (never read from the data)
    #   smoothness  terms: auto only: assumed smoothness, > 0 (default 2);
    #            auto uses about expected_events^(1/(2*smoothness+1)) terms
    #   grid_points  density only: points the density is published at
    #            (default 257, or terms + 1 if that is more)
    #   noise    laplace (default; pure epsilon-DP) or gaussian ((epsilon,
    #            delta)-DP, better when composing many releases)
    #   epsilon  this release's cost per window, > 0
    #   delta    gaussian: required, in (0, 1); laplace: leave it out
    # Event values are never used outside these bounds, and the noise is
    # fixed by this file, never by the data.
    releases:
      # Number of trips in the window.
      - name: trip_count
        kind: count
        epsilon: 0.1
      # Total fare in the window; fares outside [0, 120] are clamped.
      - name: fare_total
        kind: sum
        field: fare
        bounds: [0, 120]
        epsilon: 0.1
      # Mean trip length in km, with Gaussian noise.
      - name: km_mean
        kind: mean
        field: km
        bounds: [0, 40]
        noise: gaussian
        epsilon: 0.1
        delta: 1e-9
      # Distribution of fares: 24 bins of 5 over [0, 120].
      - name: fare_hist
        kind: histogram
        field: fare
        bounds: [0, 120]
        bins: 24
        noise: laplace
        epsilon: 0.1
      # Smooth density of trip lengths over [0, 40] km (a cosine series);
      # auto picks 6 terms for about 5000 trips per window.
      - name: km_density
        kind: density
        field: km
        bounds: [0, 40]
        terms: auto
        expected_events: 5000
        smoothness: 2
        grid_points: 129
        epsilon: 0.1
      # Fare quartiles and 90th percentile, read from a noisy tree of
      # branching^height leaves on the bounds (more ranks cost nothing).
      - name: fare_quantiles
        kind: quantiles
        field: fare
        bounds: [0, 120]
        ranks: [0.25, 0.5, 0.75, 0.9]
        branching: 16
        height: 4
        epsilon: 0.1
      # Trips per pickup zone. group_by releases one value per key; a rider
      # counts in at most max_keys zones per window (the first, by offset)
      # and with at most max_per_key trips in each. Without keys: (a list
      # of public zones, all released) zones are selected privately: a
      # zone is published only when enough distinct riders report it, and
      # the δ here is the chance that one rider's rare zone gets through.
      - name: trips_per_zone
        kind: count
        group_by: zone
        max_keys: 1
        max_per_key: 2
        epsilon: 0.2
        delta: 1e-8
`
