package config_test

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
	"strings"
	"testing"
	"time"

	"github.com/dpstream/dpstream/internal/config"
)

// writePEMs writes a self-signed certificate (cert.pem, also usable as a
// CA bundle), its key (key.pem), a second unrelated key (other-key.pem), a
// non-PEM file (junk.pem) and a password file into dir.
func writePEMs(t *testing.T, dir string) {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	key, other := newKey(), newKey()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "dpstream test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	keyPEM := func(k *ecdsa.PrivateKey) []byte {
		b, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: b})
	}
	write("cert.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	write("key.pem", keyPEM(key))
	write("other-key.pem", keyPEM(other))
	write("junk.pem", []byte("not pem\n"))
	write("password", []byte("s3cret\n"))
}

// TestSecurityValid checks what valid security sections decode to, with
// paths resolved against the config file's directory.
func TestSecurityValid(t *testing.T) {
	dir := t.TempDir()
	writePEMs(t, dir)
	path := filepath.Join(dir, "pipeline.yaml")
	abs := func(name string) string { return filepath.Join(dir, name) }
	tests := []struct {
		name     string
		yaml     string
		want     config.Security
		warnings []string // field: message of each warning, in order
	}{
		{"absent", "brokers: [k:9092]\n", config.Security{}, nil},
		{"full", `brokers: [k:9092]
security:
  tls: {enabled: true, ca_file: cert.pem, cert_file: cert.pem, key_file: key.pem, server_name: kafka.internal}
  sasl: {mechanism: SCRAM-SHA-512, username: dpstream, password_env: KAFKA_PASSWORD}
`, config.Security{
			TLS:  config.TLS{Enabled: true, CAFile: abs("cert.pem"), CertFile: abs("cert.pem"), KeyFile: abs("key.pem"), ServerName: "kafka.internal"},
			SASL: config.SASL{Mechanism: config.SASLScramSHA512, Username: "dpstream", PasswordEnv: "KAFKA_PASSWORD"},
			Line: 3,
		}, nil},
		{"tls section enables by default", "brokers: [k:9092]\nsecurity:\n  tls: {ca_file: cert.pem}\n",
			config.Security{TLS: config.TLS{Enabled: true, CAFile: abs("cert.pem")}, Line: 3}, nil},
		{"tls off", "brokers: [k:9092]\nsecurity:\n  tls: {enabled: false}\n", config.Security{Line: 3}, nil},
		{"scram-256 with password file", "brokers: [k:9092]\nsecurity:\n  tls: {}\n  sasl: {mechanism: SCRAM-SHA-256, username: u, password_file: password}\n",
			config.Security{TLS: config.TLS{Enabled: true}, SASL: config.SASL{Mechanism: config.SASLScramSHA256, Username: "u", PasswordFile: abs("password")}, Line: 3}, nil},
		{"insecure warns", "brokers: [k:9092]\nsecurity:\n  tls: {insecure_skip_verify: true}\n",
			config.Security{TLS: config.TLS{Enabled: true, InsecureSkipVerify: true}, Line: 3},
			[]string{"security.tls.insecure_skip_verify: broker certificates are not verified: anyone on the network path can impersonate the broker and read raw events; use only for testing"}},
		{"plain without tls warns", "brokers: [k:9092]\nsecurity:\n  sasl: {mechanism: PLAIN, username: u, password_env: P}\n",
			config.Security{SASL: config.SASL{Mechanism: config.SASLPlain, Username: "u", PasswordEnv: "P"}, Line: 3},
			[]string{"security.sasl.mechanism: PLAIN without security.tls sends the password in clear text; enable TLS"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(tc.yaml+minimal), path)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if cfg.Security != tc.want {
				t.Errorf("Security = %+v\nwant       %+v", cfg.Security, tc.want)
			}
			var got []string
			for _, w := range cfg.Warnings {
				got = append(got, w.Field+": "+w.Msg)
			}
			if strings.Join(got, "\n") != strings.Join(tc.warnings, "\n") {
				t.Errorf("warnings = %q, want %q", got, tc.warnings)
			}
		})
	}
}

// TestSecurityInvalid checks each error with its line, field and exact
// message.
func TestSecurityInvalid(t *testing.T) {
	dir := t.TempDir()
	writePEMs(t, dir)
	path := filepath.Join(dir, "pipeline.yaml")
	q := func(name string) string { return `"` + filepath.Join(dir, name) + `"` }
	const notExist = " does not exist (relative paths are resolved from the config file's directory)"
	tests := []struct {
		name string
		yaml string
		want []want // msg is the whole message here
	}{
		{"embedded broker", "security:\n  tls: {enabled: true}\n",
			[]want{{2, "security", "is not supported with the embedded broker, which serves plaintext only on loopback; set brokers to use a secured cluster, or remove security"}}},
		{"bad broker is not embedded", "brokers: [nohost]\nsecurity:\n  tls: {}\n",
			[]want{{1, "brokers[0]", `"nohost" is not host:port (e.g. localhost:9092)`}}},
		{"unknown key", "brokers: [k:9092]\nsecurity:\n  sasll: {}\n",
			[]want{{3, "security", `unknown field "sasll" (did you mean "sasl"?)`}}},
		{"unknown mechanism", "brokers: [k:9092]\nsecurity:\n  sasl: {mechanism: SCRAM-SHA512, username: u, password_env: P}\n",
			[]want{{3, "security.sasl.mechanism", `"SCRAM-SHA512" is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (did you mean "SCRAM-SHA-512"?)`}}},
		{"missing username", "brokers: [k:9092]\nsecurity:\n  sasl: {mechanism: PLAIN, password_env: P}\n",
			[]want{{3, "security.sasl.username", "required field is missing"}}},
		{"both password sources", "brokers: [k:9092]\nsecurity:\n  tls: {}\n  sasl:\n    mechanism: PLAIN\n    username: u\n    password_env: P\n    password_file: password\n",
			[]want{{8, "security.sasl", "give one of password_env and password_file (line 7), not both"}}},
		{"no password source", "brokers: [k:9092]\nsecurity:\n  tls: {}\n  sasl: {mechanism: PLAIN, username: u}\n",
			[]want{{4, "security.sasl", "needs password_env (the name of an environment variable holding the password) or password_file; the password itself never goes in the file"}}},
		{"password in env field", "brokers: [k:9092]\nsecurity:\n  tls: {}\n  sasl: {mechanism: PLAIN, username: u, password_env: hunter 2}\n",
			[]want{{4, "security.sasl.password_env", `"hunter 2" is not an environment variable name (letters, digits and _, e.g. KAFKA_PASSWORD); the password itself never goes in the file`}}},
		{"password file missing", "brokers: [k:9092]\nsecurity:\n  tls: {}\n  sasl: {mechanism: PLAIN, username: u, password_file: nope}\n",
			[]want{{4, "security.sasl.password_file", "password file " + q("nope") + notExist}}},
		{"cert without key", "brokers: [k:9092]\nsecurity:\n  tls: {cert_file: cert.pem}\n",
			[]want{{3, "security.tls.key_file", "required with cert_file: the client certificate's private key"}}},
		{"key without cert", "brokers: [k:9092]\nsecurity:\n  tls: {key_file: key.pem}\n",
			[]want{{3, "security.tls.cert_file", "required with key_file: the client certificate"}}},
		{"ca missing", "brokers: [k:9092]\nsecurity:\n  tls: {ca_file: missing.pem}\n",
			[]want{{3, "security.tls.ca_file", "CA file " + q("missing.pem") + notExist}}},
		{"ca not pem", "brokers: [k:9092]\nsecurity:\n  tls: {ca_file: junk.pem}\n",
			[]want{{3, "security.tls.ca_file", "CA file " + q("junk.pem") + " holds no PEM certificate"}}},
		{"key not pem", "brokers: [k:9092]\nsecurity:\n  tls: {cert_file: cert.pem, key_file: junk.pem}\n",
			[]want{{3, "security.tls.key_file", "key file " + q("junk.pem") + " holds no PEM private key"}}},
		{"cert is a key", "brokers: [k:9092]\nsecurity:\n  tls: {cert_file: key.pem, key_file: key.pem}\n",
			[]want{{3, "security.tls.cert_file", "certificate file " + q("key.pem") + " holds no PEM certificate"}}},
		{"key does not match", "brokers: [k:9092]\nsecurity:\n  tls:\n    cert_file: cert.pem\n    key_file: other-key.pem\n",
			[]want{{5, "security.tls.key_file", "does not match cert_file (line 4): tls: private key does not match public key"}}},
		{"settings with tls off", "brokers: [k:9092]\nsecurity:\n  tls: {enabled: false, ca_file: cert.pem}\n",
			[]want{{3, "security.tls.ca_file", "is set but security.tls.enabled is false; remove it or enable TLS"}}},
		{"enabled not bool", "brokers: [k:9092]\nsecurity:\n  tls: {enabled: yes}\n",
			[]want{{3, "security.tls.enabled", `must be true or false, got string "yes"`}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tc.yaml+minimal), path)
			checkErrors(t, err, path, tc.want)
			for _, e := range config.Errors(err) {
				for _, w := range tc.want {
					if e.Line == w.line && e.Field == w.field && e.Msg != w.msg {
						t.Errorf("message = %q, want exactly %q", e.Msg, w.msg)
					}
				}
			}
		})
	}
}

// TestSecurityKeysDocumented checks that every key of the security section
// has a row in README.md's security table, since the sample config leaves
// the section out (documentedOutsideExample).
func TestSecurityKeysDocumented(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, sec := range []struct {
		prefix string
		keys   []string
	}{{"security.tls.", config.TLSKeys}, {"security.sasl.", config.SASLKeys}} {
		for _, k := range sec.keys {
			if !bytes.Contains(readme, []byte("`"+sec.prefix+k+"`")) {
				t.Errorf("README.md does not document `%s%s`", sec.prefix, k)
			}
		}
	}
}
