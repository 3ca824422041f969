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
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/plan"
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
// is signed by a CA made for the test, and SASL users for PLAIN,
// SCRAM-SHA-256 and SCRAM-SHA-512.
type secureCluster struct {
	addr   string
	caFile string // PEM of the CA, in the test's directory
}

// newSecureCluster starts the cluster in dir; it is closed when the test
// ends.
func newSecureCluster(t *testing.T, dir string) *secureCluster {
	t.Helper()
	caPEM, serverCert := testPKI(t)
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.DefaultNumPartitions(1),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{serverCert}, MinVersion: tls.VersionTLS12}),
		kfake.EnableSASL(),
		kfake.Superuser(config.SASLPlain, secUser, secPassword),
		kfake.Superuser(config.SASLScramSHA256, secUser, secPassword),
		kfake.Superuser(config.SASLScramSHA512, secUser, secPassword),
	)
	if err != nil {
		t.Fatalf("kfake cluster: %v", err)
	}
	t.Cleanup(c.Close)
	return &secureCluster{addr: c.ListenAddrs()[0], caFile: caFile}
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

// secureConfig is a one-stream pipeline on the secure cluster; the
// security section is filled in by each test. Paths are relative to the
// config file's directory, as users write them.
const secureConfig = `
brokers: [{{addr}}]
{{security}}
group: {{prefix}}
topics:
  partials: {{prefix}}.partials
  releases: {{prefix}}.releases
  ledger: {{prefix}}.ledger
  accountant: {{prefix}}.accountant
  pdp: {{prefix}}.pdp
  deadletter: {{prefix}}.deadletter
streams:
  - name: trips
    topic: {{prefix}}.events
    partitions: 2
    format: json
    privacy_unit: user
    event_time: ts
    window: {size: 1s, grace: 0s, idle_timeout: 1s}
    contribution: {max_events_per_window: 2}
    budget: {epsilon: 3, delta: 1e-6}
    releases:
      - {name: n, kind: count, noise: laplace, epsilon: 0.5}
metrics: {addr: "off"}
`

// secureHarness writes the config with the given security section into a
// fresh directory under dir, loads it as dpstream run does (config.Load,
// plan.Build, kafkaio.Connect) and returns a harness on the secure
// cluster, or the error of the first step that fails.
func secureHarness(t *testing.T, sc *secureCluster, prefix, security string) (*harness, error) {
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
	text := strings.NewReplacer("{{addr}}", sc.addr, "{{prefix}}", prefix, "{{security}}", security).Replace(secureConfig)
	path := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	ps, err := plan.Build(cfg)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	conn, err := kafkaio.Connect(cfg.Brokers, cfg.Security)
	if err != nil {
		return nil, err
	}
	t.Cleanup(conn.Close)
	level := slog.LevelWarn
	if testing.Verbose() {
		level = slog.LevelInfo
	}
	return &harness{
		t: t, dir: dir, brokers: cfg.Brokers, conn: conn, cfg: cfg, plan: ps,
		log: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: level})),
	}, nil
}

// tlsSASL is a security section with TLS verified against the test CA and
// SASL with mechanism, the password in secPasswordEnv.
func tlsSASL(mechanism string) string {
	return `security:
  tls:
    ca_file: ca.pem
  sasl:
    mechanism: ` + mechanism + `
    username: ` + secUser + `
    password_env: ` + secPasswordEnv
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
			if h.conn.TLS() == nil || h.conn.SASL() == nil || h.conn.SASL().Name() != mech {
				t.Fatalf("connection from the config: TLS %v, SASL %v; want TLS and %s", h.conn.TLS() != nil, h.conn.SASL(), mech)
			}
			const windows = 2
			in := h.start("secure", pipeline.Stages{Accumulate: true, Release: true}, nil)
			// The pipeline creates the topics; wait for them before producing.
			waitFor(t, 30*time.Second, "the pipeline's topics", func() bool {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_, err := h.conn.Partitions(ctx, h.cfg.Streams[0].Topic)
				return err == nil
			}, in)
			h.produceJSON(h.cfg.Streams[0].Topic, genEvents(5, windows, 40, 15), "user")
			waitFor(t, 60*time.Second, "a release of every window", func() bool {
				return len(releasedWindows(h.releases(), "n")) >= windows
			}, in)
			in.stop()
			if in.err != nil && !errors.Is(in.err, context.Canceled) {
				t.Fatalf("pipeline: %v", in.err)
			}
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
		security string
		want     []string // each must appear in the error, case-insensitively
	}{
		{"wrong password SCRAM-SHA-256", tlsSASL(config.SASLScramSHA256), []string{"authentication"}},
		{"wrong password SCRAM-SHA-512", tlsSASL(config.SASLScramSHA512), []string{"authentication"}},
		{"wrong password PLAIN", tlsSASL(config.SASLPlain), []string{"authentication"}},
		{"no TLS", `security:
  sasl:
    mechanism: SCRAM-SHA-256
    username: dpstream
    password_env: ` + secPasswordEnv, []string{"tls"}},
		{"CA not trusted", `security:
  tls:
    enabled: true
  sasl:
    mechanism: SCRAM-SHA-256
    username: dpstream
    password_env: ` + secPasswordEnv, []string{"tls handshake", "certificate"}},
		{"no SASL", `security:
  tls:
    ca_file: ca.pem`, []string{"sasl"}},
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
			err = pipeline.Run(ctx, pipeline.Options{Config: h.cfg, Plan: h.plan, Conn: h.conn,
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
