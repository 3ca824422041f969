// Package kafkaio is dpstream's Kafka plumbing: the embedded broker, topic
// management, writers, whole-topic reads and the consumer-group loop the
// stages share. All stage I/O goes through segmentio/kafka-go; franz-go's
// kfake is used only to serve the Kafka protocol when no brokers are
// configured.
package kafkaio

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Embedded is an in-process Kafka-protocol broker (franz-go's kfake) with
// its data kept in a directory, so topics and committed offsets survive a
// restart. Any Kafka client (kcat, librdkafka, Java) can talk to it.
type Embedded struct {
	cluster *kfake.Cluster
	addr    string
	reaper  *sessionReaper // see embedded_sessions.go
}

// StartEmbedded starts the embedded broker listening on addr (host:port)
// with its state persisted in dataDir (created if missing; "" keeps state
// in memory only).
func StartEmbedded(addr, dataDir string, log *slog.Logger) (*Embedded, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("embedded broker address %q: %w (want host:port, e.g. 127.0.0.1:9092)", addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("embedded broker address %q: bad port", addr)
	}
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(port),
		kfake.ClusterID("dpstream-embedded"),
		// kfake binds 127.0.0.1; honour the configured host.
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			return net.Listen(network, net.JoinHostPort(host, strconv.Itoa(port)))
		}),
		kfake.DefaultNumPartitions(1),
		// Allow session timeouts down to 1s (Kafka's default minimum is
		// 6s): the crash tests kill consumers and need their partitions
		// back quickly. dpstream's own default stays 10s.
		kfake.GroupMinSessionTimeout(time.Second),
	}
	if dataDir != "" {
		if err := os.MkdirAll(dataDir, 0o755); err != nil {
			return nil, fmt.Errorf("embedded broker data dir: %w", err)
		}
		opts = append(opts, kfake.DataDir(dataDir))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("start embedded broker on %s: %w (is another broker or dpstream already using the port? change it with --broker-addr)", addr, err)
	}
	addrs := c.ListenAddrs()
	e := &Embedded{cluster: c, addr: addrs[0]}
	e.reaper = startSessionReaper(c, e.addr, log)
	if log != nil {
		log.Info("embedded Kafka broker started",
			"addr", e.addr, "data_dir", dataDir,
			"connect", fmt.Sprintf("kcat -b %s -L", e.addr))
	}
	return e, nil
}

// Addr is the broker's listen address (host:port).
func (e *Embedded) Addr() string { return e.addr }

// Conn is the connection to the broker. The embedded broker serves
// plaintext only (config.Parse rejects a security section without
// brokers), so it is Plaintext.
func (e *Embedded) Conn() *Connection { return Plaintext([]string{e.addr}) }

// Close stops the broker, flushing its state to the data directory.
func (e *Embedded) Close() {
	e.reaper.close()
	e.cluster.Close()
}
