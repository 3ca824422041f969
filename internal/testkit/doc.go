// Package testkit is for tests only: no production code imports it. It
// holds the fixtures that the e2e, CLI and pipeline tests share, so each
// test says what is particular to it and nothing else:
//
//   - a builder for pipeline configurations (Pipeline, Stream, Release),
//     which renders the YAML a user would write. The tests then parse that
//     text as the product does, so configuration parsing stays under test;
//     tests whose subject is a YAML text itself (error messages with line
//     numbers, the explanation of a given file) keep their own text.
//   - one Kafka cluster harness (Cluster): the embedded broker in a
//     temporary directory or in memory, or the brokers named by
//     KAFKA_BROKERS, with the topic creation, producing and reading back of
//     releases, ledger charges, budget states and partials that the tests
//     check, every resource closed by t.Cleanup.
//   - topic dumps (DumpTopics, LoadTopics, Cluster.Load): a broker's
//     topics and consumer-group offsets written to a directory as JSON
//     lines, and loaded into a fresh broker record for record at the same
//     offsets, so a test can start from what an earlier version wrote (the
//     upgrade fixtures under testdata/upgrade).
//
// It imports no package that imports it back from its tests: the config
// package's own tests keep hand-written YAML, and the pipeline package's
// tests can use it because it does not import internal/pipeline.
package testkit
