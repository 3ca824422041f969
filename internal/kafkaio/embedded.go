// Package kafkaio is dpstream's Kafka plumbing: the embedded broker, topic
// management, writers, whole-topic reads and the consumer-group loop the
// stages share. All stage I/O goes through segmentio/kafka-go; franz-go's
// kfake is used only to serve the Kafka protocol when no brokers are
// configured.
package kafkaio

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gofrs/flock"
	"github.com/twmb/franz-go/pkg/kfake"
)

// LockFile is the file in an embedded broker's data directory that the
// broker holds an exclusive OS file lock on (flock(2) on Unix, LockFileEx
// on Windows) for its lifetime. It holds the pid of the holder, for the
// error message of the next process that tries; the lock, not the file, is
// what counts, so a file left behind by a crash locks nothing.
const LockFile = "dpstream.lock"

// ErrDataDirLocked is returned (wrapped) by StartEmbedded when another
// process, or another broker in this one, holds the data directory.
var ErrDataDirLocked = errors.New("embedded broker data directory in use")

// Embedded is an in-process Kafka-protocol broker (franz-go's kfake) with
// its data kept in a directory, so topics and committed offsets survive a
// restart. Any Kafka client (kcat, librdkafka, Java) can talk to it.
type Embedded struct {
	cluster *kfake.Cluster
	addr    string
	// lock is the data directory's lock, nil for an in-memory broker.
	lock   *flock.Flock
	reaper *sessionReaper // see embedded_sessions.go
}

// StartEmbedded starts the embedded broker listening on addr (host:port)
// with its state persisted in dataDir (created if missing; "" keeps state
// in memory only).
//
// A data directory belongs to one broker at a time: two brokers writing one
// directory would each save their own topics over the other's, leaving a
// ledger and an accountant that disagree. StartEmbedded therefore takes an
// exclusive OS lock on dataDir/LockFile before anything else, and fails
// with ErrDataDirLocked, naming the directory and the holder's pid, when
// another broker holds it. The lock is released by Close, and by the
// operating system when the process dies, however it dies.
//
// Durability: with a data directory the broker writes every produced batch
// to its segment files as it arrives (to the operating system's page
// cache), so a killed process loses nothing; by default it also fsyncs
// every batch before acknowledging it, so that a machine that crashes or
// loses power does not lose the tail of the ledger (the privacy budget's
// record) either. NoSync turns the fsync off: faster, and safe against a
// killed process but not against a crashed machine.
func StartEmbedded(addr, dataDir string, log *slog.Logger, options ...EmbeddedOption) (*Embedded, error) {
	var o embeddedOptions
	for _, opt := range options {
		opt(&o)
	}
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
	var lock *flock.Flock
	if dataDir != "" {
		if err := os.MkdirAll(dataDir, 0o755); err != nil {
			return nil, fmt.Errorf("embedded broker data dir: %w", err)
		}
		if lock, err = lockDataDir(dataDir); err != nil {
			return nil, err
		}
		opts = append(opts, kfake.DataDir(dataDir))
		if !o.noSync {
			opts = append(opts, kfake.SyncWrites())
		}
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		if lock != nil {
			_ = lock.Unlock()
		}
		return nil, fmt.Errorf("start embedded broker on %s: %w (is another broker or dpstream already using the port? change it with --broker-addr)", addr, err)
	}
	addrs := c.ListenAddrs()
	e := &Embedded{cluster: c, addr: addrs[0], lock: lock}
	e.reaper = startSessionReaper(c, e.addr, log)
	if log != nil {
		log.Info("embedded Kafka broker started",
			"addr", e.addr, "data_dir", dataDir, "fsync", dataDir != "" && !o.noSync,
			"connect", fmt.Sprintf("kcat -b %s -L", e.addr))
	}
	return e, nil
}

// EmbeddedOption changes how StartEmbedded runs the broker.
type EmbeddedOption func(*embeddedOptions)

type embeddedOptions struct{ noSync bool }

// NoSync makes the broker acknowledge writes without fsyncing them (see
// StartEmbedded): for throwaway data (the demo, benchmarks, tests) or when
// losing the last writes to a machine crash is acceptable.
func NoSync() EmbeddedOption { return func(o *embeddedOptions) { o.noSync = true } }

// Addr is the broker's listen address (host:port).
func (e *Embedded) Addr() string { return e.addr }

// Conn is the connection to the broker. The embedded broker serves
// plaintext only (config.Parse rejects a security section without
// brokers), so it is Plaintext.
func (e *Embedded) Conn() *Connection { return Plaintext([]string{e.addr}) }

// Close stops the broker, flushing its state to the data directory, and
// then releases the directory's lock.
func (e *Embedded) Close() {
	e.reaper.close()
	e.cluster.Close()
	if e.lock != nil {
		// An unlock error leaves the descriptor open until the process
		// exits, which releases the lock anyway.
		_ = e.lock.Unlock()
	}
}

// lockDataDir takes the exclusive lock on dir's LockFile without waiting,
// and records this process's pid in the file. The file is never removed:
// removing a lock file while others may have it open lets two processes
// each lock a different file of the same name.
func lockDataDir(dir string) (*flock.Flock, error) {
	path := filepath.Join(dir, LockFile)
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	l := flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o644))
	ok, err := l.TryLock()
	if err != nil {
		return nil, fmt.Errorf("embedded broker data dir %s: lock %s: %w", abs, path, err)
	}
	if !ok {
		holder := "another process"
		if pid := readLockPID(path); pid != "" {
			holder = "process " + pid
		}
		return nil, fmt.Errorf("%w: %s is locked by %s, which runs an embedded broker on it; "+
			"two brokers on one directory would leave its ledger and accountant inconsistent. "+
			"Stop that process first, or give this one a directory of its own (--data-dir, or embedded.data_dir in the config)",
			ErrDataDirLocked, abs, holder)
	}
	// The pid is for the message above only; a failure to write it
	// costs nothing but that.
	_ = os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
	return l, nil
}

// readLockPID returns the pid recorded in a lock file, or "" if it holds
// none.
func readLockPID(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	s := strings.TrimSpace(string(b))
	if _, err := strconv.Atoi(s); err != nil {
		return ""
	}
	return s
}
