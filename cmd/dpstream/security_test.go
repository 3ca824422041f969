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
)

// securedConfig is a minimal pipeline on brokers with the security section
// sec (the CA file is ca.pem beside the config).
const securedConfig = `
brokers: [kafka-1:9093, kafka-2:9093]
%s
streams:
  - name: s
    topic: s.events
    format: json
    privacy_unit: user
    window: {size: 1m}
    contribution: {max_events_per_window: 1}
    budget: {epsilon: 1, delta: 1e-6}
    releases:
      - {name: n, kind: count, noise: laplace, epsilon: 0.5}
`

// writeSecuredConfig writes a CA certificate and the config with the
// security section sec into a temporary directory and returns the
// config's path.
func writeSecuredConfig(t *testing.T, sec string) string {
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
	path := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(securedConfig, "%s", sec, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConnForSecurity checks that the connection every Kafka command
// builds from its config (connFor: run, produce, tail, budget) carries the
// config's TLS and SASL, also when --brokers overrides the addresses, and
// that the config's security warnings are shown.
func TestConnForSecurity(t *testing.T) {
	t.Setenv("DPSTREAM_TEST_KAFKA_PASSWORD", "pw")
	const tlsSASL = `security:
  tls: {ca_file: ca.pem}
  sasl: {mechanism: SCRAM-SHA-256, username: dpstream, password_env: DPSTREAM_TEST_KAFKA_PASSWORD}`
	cases := []struct {
		name        string
		sec         string
		flagBrokers string
		wantBrokers []string
		wantTLS     bool
		wantCA      bool // RootCAs from ca_file rather than the system roots
		wantSASL    string
		wantWarn    string // "" = no warning
	}{
		{"no security", "", "", []string{"kafka-1:9093", "kafka-2:9093"}, false, false, "", ""},
		{"TLS and SCRAM", tlsSASL, "", []string{"kafka-1:9093", "kafka-2:9093"}, true, true, "SCRAM-SHA-256", ""},
		{"--brokers keeps the security", tlsSASL, "ext-1:19093", []string{"ext-1:19093"}, true, true, "SCRAM-SHA-256", ""},
		{"TLS with system roots", "security:\n  tls: {enabled: true}", "", []string{"kafka-1:9093", "kafka-2:9093"}, true, false, "", ""},
		{"PLAIN over TLS, unverified", `security:
  tls: {insecure_skip_verify: true}
  sasl: {mechanism: PLAIN, username: dpstream, password_env: DPSTREAM_TEST_KAFKA_PASSWORD}`, "", []string{"kafka-1:9093", "kafka-2:9093"}, true, false, "PLAIN", "insecure_skip_verify"},
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
	path := writeSecuredConfig(t, `security:
  sasl: {mechanism: SCRAM-SHA-512, username: dpstream, password_env: DPSTREAM_TEST_UNSET_PASSWORD}`)
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
