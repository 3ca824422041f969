// Package pdpstore keeps the per-instance DP (pDP) accounts of the release
// stage: for every stream, every unit's cumulative per-instance account
// (schema.PDPUnit), a histogram of the accounts' ε, the keys of the window
// summaries already written, and how far it has read the pdp topic. It is
// a cache of the compacted, RESTRICTED dpstream.pdp topic. It computes no
// per-instance DP itself: the release stage does (stages/release, pdp.go),
// reading and replacing unit accounts through a Draft in Store.Prepare, and
// this package stores what it decides, keeps the histogram that the
// window summary's cumulative quantiles are read from, and rebuilds
// itself from the topic. It knows the topic's records (package schema)
// but neither Kafka nor the release stage's windows and plans.
//
// Bounded memory. The release stage's store (Open) is an on-disk cache of
// the topic, in a bbolt file: the accounts live on disk, and a window
// reads and writes only the accounts of its own units, in one transaction
// each way. What stays in the Go heap does not grow with the number of
// units: the window's units and their records, a catch-up batch
// (pdpCatchUpBatch records), and one stream's histogram while a
// transaction uses it (at most a few thousand buckets over any realistic
// range of ε), plus bbolt's dirty pages while a transaction commits (up to
// a page per record of a catch-up batch, 16 MB, returned after). Memory
// per unit in the heap is therefore nil: at 10⁶ units
// BenchmarkMillionUnits measures 3.4 MB of heap in use after a rebuild
// and 1.9 MB after a restart (in a test binary with the store alone),
// against 318 MB (about 320 bytes a unit) for the accounts in maps. The
// file takes about 206 bytes per unit (an 81-byte value, the unit's name
// as key, and B+tree overhead); bbolt maps it read-only, so the pages the
// store touches count towards the process's RSS as page cache, which the
// kernel reclaims under memory pressure (a container's memory limit
// included) rather than failing.
// NewMemory keeps the same state in maps instead: every unit in memory,
// for `dpstream simulate` and tests.
//
// Per-window work. The window summary's distribution of the cumulative ε
// over all of the stream's units is read off the stream's histogram
// (pdpAggregate), which each update maintains by moving a unit from the
// bucket of its old ε to the bucket of its new one: a window costs one
// lookup and one write per unit of the window plus a walk over the
// histogram's non-empty buckets, whatever the number of units ever seen.
// The quantiles are then approximate, always from above: see
// QuantileError. Only a change of the stream's δ (a configuration change)
// re-reads every account of the stream, once.
//
// A cache of the topic; crash safety. Every record the store holds was
// acknowledged on the pdp topic first: the release stage prepares a
// window's update (Store.Prepare, which changes nothing), writes its
// records to the topic, and only then applies it (Store.Commit, one
// transaction: the units, the histogram and the summary's key, all or
// nothing). The store remembers the offset of each pdp partition that it
// has read the topic up to (pdpPosition). At every start of a release
// handler it catches up from there (Store.CatchUp): records written by
// another instance while it owned the streams, or by this one before a
// crash, are applied in offset order in bounded batches, each committed
// with the position it reached, so a crash between batches loses nothing;
// a store file that is missing, unreadable, or from another topic is
// rebuilt from the topic the same way, from its first offset, so a new pod
// without a volume works, only more slowly at its first start. Records are
// applied as Store.Restore does (the later LastWindow wins), so reading a
// record a second time (the store's own writes are read back at the next
// catch-up) changes nothing. A crash after the topic write and before
// Commit therefore leaves a store that the next catch-up completes, and a
// crash before or during the write leaves the window unsummarized
// (Store.Summarized), to be prepared again.
//
// Confidentiality (DESIGN invariant 6). Everything here is RESTRICTED: the
// file holds the same data-dependent values as the pdp topic, it is
// created 0600 in a 0700 directory, and must be protected like the topic
// (README, "pdp_store"). No public release may depend on it.
package pdpstore
