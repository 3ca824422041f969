package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/internal/testkit"
)

// These tests run the pipeline against a kfake cluster that only speaks TLS
// and only serves authenticated (SASL) clients, so every connection the
// pipeline makes (topic creation, the ledger retention check, the consumer
// groups, offset commits, readers, writers, recovery reads) must carry the
// configured security: one plaintext or unauthenticated connection fails
// the run. They start their own cluster in process, so they run the same
// with or without KAFKA_BROKERS (the CI broker is plaintext and is not
// used here).

// secPasswordEnv is the environment variable the configs name in
// security.sasl.password_env.
const secPasswordEnv = "DPSTREAM_E2E_KAFKA_PASSWORD"

// secUser and secPassword are the SASL credentials the cluster knows, for
// each mechanism.
const (
	secUser     = "dpstream"
	secPassword = "correct horse battery staple"
)

// secureCluster is a kfake cluster with a TLS listener whose certificate
// is signed by a CA made for the test, and SASL users.
type secureCluster struct {
	addr   string
	caFile string // PEM of the CA, in the test's directory
	caPEM  []byte
}

// newSecureCluster starts the cluster with the SASL users users (kfake
// Superuser and User options; nil: secUser as a superuser for PLAIN,
// SCRAM-SHA-256 and SCRAM-SHA-512) and keeps its CA in dir. It is closed
// when the test ends.
func newSecureCluster(t *testing.T, dir string, users ...kfake.Opt) *secureCluster {
	t.Helper()
	caPEM, serverCert := testPKI(t)
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if users == nil {
		users = []kfake.Opt{
			kfake.Superuser(config.SASLPlain, secUser, secPassword),
			kfake.Superuser(config.SASLScramSHA256, secUser, secPassword),
			kfake.Superuser(config.SASLScramSHA512, secUser, secPassword),
		}
	}
	opts := append([]kfake.Opt{
		kfake.NumBrokers(1),
		kfake.DefaultNumPartitions(1),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{serverCert}, MinVersion: tls.VersionTLS12}),
		kfake.EnableSASL(),
	}, users...)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("kfake cluster: %v", err)
	}
	t.Cleanup(c.Close)
	return &secureCluster{addr: c.ListenAddrs()[0], caFile: caFile, caPEM: caPEM}
}

// testPKI makes a CA and a server certificate it signs for 127.0.0.1 and
// localhost (where kfake listens), valid for an hour. It returns the CA
// certificate in PEM and the server's key pair.
func testPKI(t *testing.T) ([]byte, tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "dpstream test CA"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kfake"},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	return caPEM, tls.Certificate{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}
}

// secureConfig is a one-stream pipeline on the secure cluster at addr,
// its topics and group named with prefix, with the security section of
// each test. Paths are relative to the config file's directory, as users
// write them.
func secureConfig(addr, prefix string, sec testkit.Security) *testkit.Pipeline {
	return testkit.NewPipeline(testkit.NewStream("trips", "events").Partitions(2).Budget(3, 1e-6).Releases(
		testkit.Count("n").Noise("laplace").Epsilon(0.5))).
		TopicPrefix(prefix).Brokers(addr).Security(sec).Group(prefix).
		Topics(testkit.Topics{Partials: prefix + ".partials", Releases: prefix + ".releases", Ledger: prefix + ".ledger",
			Accountant: prefix + ".accountant", PDP: prefix + ".pdp", DeadLetter: prefix + ".deadletter"})
}

// secureHarness writes the config with the given security section into a
// fresh directory under dir, loads it as dpstream run does (config.Load,
// plan.Build, kafkaio.Connect) and returns a harness on the secure
// cluster, or the error of the first step that fails.
func secureHarness(t *testing.T, sc *secureCluster, prefix string, sec testkit.Security) (*harness, error) {
	t.Helper()
	dir := t.TempDir()
	// The config names the CA relative to its own directory.
	ca, err := os.ReadFile(sc.caFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), ca, 0o600); err != nil {
		t.Fatal(err)
	}
	path := secureConfig(sc.addr, prefix, sec).WriteFile(t, filepath.Join(dir, "pipeline.yaml"))
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	cfg.PDPStore = filepath.Join(dir, "pdp") // not in the package directory
	ps, err := plan.Build(cfg)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	conn, err := kafkaio.Connect(cfg.Brokers, cfg.Security)
	if err != nil {
		return nil, err
	}
	t.Cleanup(conn.Close)
	return &harness{Cluster: testkit.Attach(t, conn), t: t, dir: dir, cfg: cfg, plan: ps, log: testLogger(t)}, nil
}

// stopAfterReleases waits for a release of the count n of each of the
// first windows windows, then stops in, failing the test if it failed.
func (h *harness) stopAfterReleases(in *instance, windows int) {
	h.t.Helper()
	waitFor(h.t, 60*time.Second, "a release of every window", func() bool {
		return len(releasedWindows(h.releases(), "n")) >= windows
	}, in)
	in.stop()
	if in.err != nil && !errors.Is(in.err, context.Canceled) {
		h.t.Fatalf("pipeline: %v", in.err)
	}
}

// tlsSASL is a security section with TLS verified against the test CA and
// SASL with mechanism, the password in secPasswordEnv.
func tlsSASL(mechanism string) testkit.Security {
	return testkit.Security{TLS: &testkit.TLS{CAFile: "ca.pem"}, SASL: saslAs(mechanism)}
}

// saslAs is SASL as secUser with mechanism, the password in
// secPasswordEnv.
func saslAs(mechanism string) *testkit.SASL {
	return &testkit.SASL{Mechanism: mechanism, Username: secUser, PasswordEnv: secPasswordEnv}
}

// TestSecurityPipeline runs the whole pipeline (accumulate and release in
// one process, as `dpstream run` does) over TLS with each SASL mechanism,
// and checks that every window's release arrives and is charged in the
// ledger. The releases are read back over the same secured connection.
func TestSecurityPipeline(t *testing.T) {
	sc := newSecureCluster(t, t.TempDir())
	t.Setenv(secPasswordEnv, secPassword)
	for _, mech := range []string{config.SASLScramSHA256, config.SASLScramSHA512, config.SASLPlain} {
		t.Run(mech, func(t *testing.T) {
			prefix := strings.ToLower(mech)
			h, err := secureHarness(t, sc, prefix, tlsSASL(mech))
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			if h.Conn.TLS() == nil || h.Conn.SASL() == nil || h.Conn.SASL().Name() != mech {
				t.Fatalf("connection from the config: TLS %v, SASL %v; want TLS and %s", h.Conn.TLS() != nil, h.Conn.SASL(), mech)
			}
			const windows = 2
			in := h.start("secure", pipeline.Stages{Accumulate: true, Release: true}, nil)
			// The pipeline creates the topics; wait for them before producing.
			waitFor(t, 30*time.Second, "the pipeline's topics", func() bool {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_, err := h.Conn.Partitions(ctx, h.cfg.Streams[0].Topic)
				return err == nil
			}, in)
			h.ProduceJSON(h.cfg.Streams[0].Topic, genEvents(5, windows, 40, 15), "user")
			h.stopAfterReleases(in, windows)
			if got := len(h.ledger()); got < windows {
				t.Errorf("ledger has %d charges, want at least %d (one per released window)", got, windows)
			}
		})
	}
}

// TestSecurityRefused checks that a pipeline whose security does not match
// the cluster's fails promptly with an error that says why, instead of
// hanging or retrying forever: a wrong password (for each mechanism),
// SASL without TLS against the TLS listener, TLS verified against the
// system roots instead of the cluster's CA, and TLS without SASL against a
// cluster that requires authentication.
func TestSecurityRefused(t *testing.T) {
	sc := newSecureCluster(t, t.TempDir())
	t.Setenv(secPasswordEnv, "wrong password")
	cases := []struct {
		name     string
		security testkit.Security
		want     []string // each must appear in the error, case-insensitively
	}{
		{"wrong password SCRAM-SHA-256", tlsSASL(config.SASLScramSHA256), []string{"authentication"}},
		{"wrong password SCRAM-SHA-512", tlsSASL(config.SASLScramSHA512), []string{"authentication"}},
		{"wrong password PLAIN", tlsSASL(config.SASLPlain), []string{"authentication"}},
		{"no TLS", testkit.Security{SASL: saslAs(config.SASLScramSHA256)}, []string{"tls"}},
		{"CA not trusted", testkit.Security{TLS: &testkit.TLS{Enabled: true}, SASL: saslAs(config.SASLScramSHA256)}, []string{"tls handshake", "certificate"}},
		{"no SASL", testkit.Security{TLS: &testkit.TLS{CAFile: "ca.pem"}}, []string{"sasl"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := secureHarness(t, sc, "refused", tc.security)
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			// Bounded well below the test timeout: a hang is a failure
			// here, not a timeout of the whole package.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			err = pipeline.Run(ctx, pipeline.Options{Config: h.cfg, Plan: h.plan, Conn: h.Conn,
				Stages: pipeline.Stages{Accumulate: true, Release: true}, Log: h.log})
			took := time.Since(start)
			if err == nil {
				t.Fatal("pipeline ran; want a connection error")
			}
			if ctx.Err() != nil {
				t.Fatalf("pipeline did not fail by itself within 20s (it hangs or retries): %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(strings.ToLower(err.Error()), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			t.Logf("failed after %s: %v", took.Round(time.Millisecond), err)
		})
	}
}

// TestSecurityACLs runs the pipeline on a cluster that enforces ACLs, as
// dpstream's own principal holding exactly the operations the README's
// "Topic ACLs" section lists (and no Create: an administrator created the
// topics beforehand), and checks that releases arrive. It proves that list
// is sufficient, as far as kfake implements Kafka's authorizer (Describe
// implied by Read and Write, as in Kafka): the release stage checkpoints
// and trims its ledger partition (DeleteRecords, the Delete permission)
// too.
func TestSecurityACLs(t *testing.T) {
	const prefix = "acl"
	topic := func(name string, ops ...kmsg.ACLOperation) []kfake.ACL {
		var out []kfake.ACL
		for _, op := range ops {
			out = append(out, kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: prefix + "." + name,
				Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: op, Allow: true})
		}
		return out
	}
	read, write, describeConfigs, del := kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationDelete
	var acls []kfake.ACL
	acls = append(acls, topic("events", read)...)
	acls = append(acls, topic("partials", read, write)...)
	acls = append(acls, topic("releases", read, write)...)
	acls = append(acls, topic("ledger", read, write, describeConfigs, del)...)
	acls = append(acls, topic("accountant", write)...)
	acls = append(acls, topic("pdp", read, write)...)
	acls = append(acls, topic("deadletter", write)...)
	// Both consumer groups, <group>-accumulate and <group>-release.
	acls = append(acls, kfake.ACL{Resource: kmsg.ACLResourceTypeGroup, Name: prefix + "-",
		Pattern: kmsg.ACLResourcePatternTypePrefixed, Operation: read, Allow: true})
	const admin, adminPassword = "admin", "admin password"
	const producer, producerPassword = "producer", "producer password"
	sc := newSecureCluster(t, t.TempDir(),
		kfake.EnableACLs(),
		kfake.Superuser(config.SASLPlain, admin, adminPassword),
		kfake.User(config.SASLScramSHA512, secUser, secPassword, acls...),
		// The producers may write the input topic and nothing else.
		kfake.User(config.SASLPlain, producer, producerPassword, topic("events", write)...),
	)
	t.Setenv(secPasswordEnv, secPassword)
	h, err := secureHarness(t, sc, prefix, tlsSASL(config.SASLScramSHA512))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}

	// The administrator creates the topics, as on a locked-down cluster.
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(sc.caPEM)
	as := func(user, password string) *kafkaio.Connection {
		c := kafkaio.NewConnection(h.Brokers, &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
			plain.Mechanism{Username: user, Password: password})
		t.Cleanup(c.Close)
		return c
	}
	adminConn := as(admin, adminPassword)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := adminConn.EnsureTopics(ctx, pipeline.Topics(h.cfg)); err != nil {
		t.Fatalf("admin: create topics: %v", err)
	}
	// Without Create, dpstream's own EnsureTopics is refused per topic;
	// the topics exist, so that is not an error.
	if err := h.Conn.EnsureTopics(ctx, pipeline.Topics(h.cfg)); err != nil {
		t.Fatalf("EnsureTopics on existing topics without Create: %v", err)
	}
	// A topic that does not exist and may not be created is an error
	// that says what to grant.
	err = h.Conn.EnsureTopics(ctx, []kafkaio.TopicSpec{{Name: prefix + ".missing", Partitions: 1}})
	if err == nil || !strings.Contains(err.Error(), "Create") {
		t.Errorf("EnsureTopics of a missing topic without Create = %v, want an error naming the Create permission", err)
	}

	const windows = 2
	h.checkpointEvery = 300 * time.Millisecond
	in := h.start("acl", pipeline.Stages{Accumulate: true, Release: true}, nil)
	// The events come from the producers' principal: dpstream's may not
	// write its input.
	producers := testkit.Attach(t, as(producer, producerPassword))
	producers.ProduceJSON(h.cfg.Streams[0].Topic, genEvents(9, windows, 40, 15), "user")
	stream := h.cfg.Streams[0].Name
	waitFor(t, 60*time.Second, "the ledger partition of the stream trimmed to a checkpoint (Delete on the ledger)", func() bool {
		return h.ledgerStart(h.partialsPartition(stream)) > 0
	}, in)
	h.stopAfterReleases(in, windows)
	// And the producers may not read what they wrote, nor the releases
	// (a topic the principal may not describe looks absent).
	for _, tp := range []string{h.cfg.Streams[0].Topic, h.cfg.Topics.Releases} {
		n := 0
		err := producers.Conn.ReadAll(ctx, tp, func(kafka.Message) error { n++; return nil })
		if err == nil || n > 0 {
			t.Errorf("producer read %d records of %s (err %v); want it refused", n, tp, err)
		}
	}
}
