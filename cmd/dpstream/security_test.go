package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/testkit"
)

// securedConfig is a minimal pipeline on brokers with the security section
// sec (the CA file is ca.pem beside the config).
func securedConfig(sec testkit.Security) *testkit.Pipeline {
	return testkit.NewPipeline(testkit.NewStream("s", "s.events").EventTime("").Window(time.Minute, 0, 0).MaxEvents(1).Budget(1, 1e-6).
		Releases(testkit.Count("n").Noise("laplace").Epsilon(0.5))).
		Brokers("kafka-1:9093", "kafka-2:9093").Security(sec).Metrics("")
}

// writeSecuredConfig writes a CA certificate and the config with the
// security section sec into a temporary directory and returns the
// config's path.
func writeSecuredConfig(t *testing.T, sec testkit.Security) string {
	t.Helper()
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return securedConfig(sec).WriteFile(t, filepath.Join(dir, "pipeline.yaml"))
}

// TestConnForSecurity checks that the connection every Kafka command
// builds from its config (connFor: run, produce, tail, budget) carries the
// config's TLS and SASL, also when --brokers overrides the addresses, and
// that the config's security warnings are shown.
func TestConnForSecurity(t *testing.T) {
	t.Setenv("DPSTREAM_TEST_KAFKA_PASSWORD", "pw")
	sasl := func(mechanism string) *testkit.SASL {
		return &testkit.SASL{Mechanism: mechanism, Username: "dpstream", PasswordEnv: "DPSTREAM_TEST_KAFKA_PASSWORD"}
	}
	tlsSASL := testkit.Security{TLS: &testkit.TLS{CAFile: "ca.pem"}, SASL: sasl("SCRAM-SHA-256")}
	cases := []struct {
		name        string
		sec         testkit.Security
		flagBrokers string
		wantBrokers []string
		wantTLS     bool
		wantCA      bool // RootCAs from ca_file rather than the system roots
		wantSASL    string
		wantWarn    string // "" = no warning
	}{
		{"no security", testkit.Security{}, "", []string{"kafka-1:9093", "kafka-2:9093"}, false, false, "", ""},
		{"TLS and SCRAM", tlsSASL, "", []string{"kafka-1:9093", "kafka-2:9093"}, true, true, "SCRAM-SHA-256", ""},
		{"--brokers keeps the security", tlsSASL, "ext-1:19093", []string{"ext-1:19093"}, true, true, "SCRAM-SHA-256", ""},
		{"TLS with system roots", testkit.Security{TLS: &testkit.TLS{Enabled: true}}, "", []string{"kafka-1:9093", "kafka-2:9093"}, true, false, "", ""},
		{"PLAIN over TLS, unverified", testkit.Security{TLS: &testkit.TLS{InsecureSkipVerify: true}, SASL: sasl("PLAIN")}, "", []string{"kafka-1:9093", "kafka-2:9093"}, true, false, "PLAIN", "insecure_skip_verify"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Load(writeSecuredConfig(t, tc.sec))
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			conn, closeConn, err := connFor(cfg, connFlags{brokers: tc.flagBrokers}, false, nil, &stderr)
			if err != nil {
				t.Fatal(err)
			}
			defer closeConn()
			if !slices.Equal(conn.Brokers, tc.wantBrokers) {
				t.Errorf("brokers %v, want %v", conn.Brokers, tc.wantBrokers)
			}
			if got := conn.TLS() != nil; got != tc.wantTLS {
				t.Errorf("TLS %v, want %v", got, tc.wantTLS)
			}
			if tc.wantTLS && (conn.TLS().RootCAs != nil) != tc.wantCA {
				t.Errorf("RootCAs set %v, want %v (ca_file)", conn.TLS().RootCAs != nil, tc.wantCA)
			}
			gotSASL := ""
			if conn.SASL() != nil {
				gotSASL = conn.SASL().Name()
			}
			if gotSASL != tc.wantSASL {
				t.Errorf("SASL %q, want %q", gotSASL, tc.wantSASL)
			}
			if tc.wantTLS != (conn.Dialer() != nil && conn.Dialer().TLS != nil) {
				t.Errorf("the readers' and groups' dialer does not carry the TLS config")
			}
			if tc.wantWarn == "" && stderr.Len() > 0 {
				t.Errorf("unexpected warning: %s", stderr.String())
			}
			if tc.wantWarn != "" && !strings.Contains(stderr.String(), tc.wantWarn) {
				t.Errorf("stderr %q does not warn about %s", stderr.String(), tc.wantWarn)
			}
		})
	}
}

// TestKafkaCommandsNeedPassword checks that every command that connects to
// Kafka stops with the config exit code, before connecting, when the SASL
// password variable the config names is unset: it must not fall back to an
// unauthenticated connection.
func TestKafkaCommandsNeedPassword(t *testing.T) {
	path := writeSecuredConfig(t, testkit.Security{SASL: &testkit.SASL{Mechanism: "SCRAM-SHA-512", Username: "dpstream", PasswordEnv: "DPSTREAM_TEST_UNSET_PASSWORD"}})
	t.Setenv("DPSTREAM_TEST_UNSET_PASSWORD", "")
	events := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(events, []byte(`{"user":"a"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"run", "-c", path, "--metrics-addr", "off"},
		{"produce", "-c", path, "--file", events},
		{"tail", "releases", "-c", path},
		{"budget", "-c", path},
	} {
		t.Run(args[0], func(t *testing.T) {
			code, _, stderr := cliTimeout(t, 10*time.Second, args...)
			if code != exitConfig {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, exitConfig, stderr)
			}
			if !strings.Contains(stderr, "DPSTREAM_TEST_UNSET_PASSWORD is unset or empty") {
				t.Errorf("stderr does not name the unset password variable:\n%s", stderr)
			}
		})
	}
}
