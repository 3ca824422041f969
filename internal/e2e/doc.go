// Package e2e holds dpstream's end-to-end tests: the whole pipeline over the
// real Kafka protocol, on the embedded broker by default or on the brokers
// in KAFKA_BROKERS.
package e2e
