package kafkaio

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"hash"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go/sasl/plain"

	"github.com/dpstream/dpstream/internal/config"
)

// testPKI writes a CA certificate (ca.pem) and a client certificate signed
// by it with its key (client.pem, client-key.pem) into dir, and returns the
// two certificates.
func testPKI(t *testing.T, dir string) (ca, client *x509.Certificate) {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey, clientKey := key(), key()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "dpstream test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err = x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	clTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "dpstream"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	clDER, err := x509.CreateCertificate(rand.Reader, clTmpl, ca, &clientKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	client, err = x509.ParseCertificate(clDER)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(clientKey)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]*pem.Block{
		"ca.pem":         {Type: "CERTIFICATE", Bytes: caDER},
		"client.pem":     {Type: "CERTIFICATE", Bytes: clDER},
		"client-key.pem": {Type: "PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return ca, client
}

// TestConnectTLS checks that the dialer and the transport carry the TLS
// config built from the settings: the CA pool verifies a certificate the
// CA signed (and not one it did not), the server name is kept, and the
// client certificate is loaded.
func TestConnectTLS(t *testing.T) {
	dir := t.TempDir()
	ca, client := testPKI(t, dir)
	conn, err := Connect([]string{"k:9093"}, config.Security{TLS: config.TLS{
		Enabled: true, CAFile: filepath.Join(dir, "ca.pem"), ServerName: "kafka.internal",
		CertFile: filepath.Join(dir, "client.pem"), KeyFile: filepath.Join(dir, "client-key.pem"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	d, tr := conn.Dialer(), conn.Transport()
	if d == nil || tr == nil {
		t.Fatalf("Dialer = %v, Transport = %v; want both set for TLS", d, tr)
	}
	if d.TLS != conn.TLS() || tr.TLS != conn.TLS() {
		t.Fatal("dialer and transport do not share the connection's TLS config")
	}
	if d.SASLMechanism != nil || tr.SASL != nil {
		t.Error("SASL set without sasl settings")
	}
	c := conn.TLS()
	if c.ServerName != "kafka.internal" {
		t.Errorf("ServerName = %q", c.ServerName)
	}
	if c.MinVersion != tls.VersionTLS12 || c.InsecureSkipVerify {
		t.Errorf("MinVersion = %x, InsecureSkipVerify = %v", c.MinVersion, c.InsecureSkipVerify)
	}
	chains, err := client.Verify(x509.VerifyOptions{Roots: c.RootCAs, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	if err != nil {
		t.Errorf("RootCAs does not verify a certificate signed by the test CA: %v", err)
	} else if chain := chains[0]; !chain[len(chain)-1].Equal(ca) {
		t.Error("verified chain does not end at the test CA")
	}
	_, stranger := testPKI(t, t.TempDir())
	if _, err := stranger.Verify(x509.VerifyOptions{Roots: c.RootCAs, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err == nil {
		t.Error("RootCAs verifies a certificate from another CA")
	}
	if len(c.Certificates) != 1 || len(c.Certificates[0].Certificate) == 0 {
		t.Fatalf("client certificates = %d, want 1", len(c.Certificates))
	}
	if got, _ := x509.ParseCertificate(c.Certificates[0].Certificate[0]); got == nil || !got.Equal(client) {
		t.Error("loaded client certificate is not client.pem")
	}
	// Everything built from the connection uses them.
	if w := conn.NewWriter("t"); w.Transport != tr {
		t.Error("NewWriter does not use the connection's transport")
	}
	if cl := conn.Client(); cl.Transport != tr {
		t.Error("Client does not use the connection's transport")
	}
}

// TestConnectSASL checks the mechanism built for each SASL setting and the
// password sources.
func TestConnectSASL(t *testing.T) {
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DPSTREAM_TEST_KAFKA_PW", "from-env")
	tests := []struct {
		name     string
		sasl     config.SASL
		wantName string // mechanism name; "" = error expected
		wantErr  string
	}{
		{"plain env", config.SASL{Mechanism: "PLAIN", Username: "u", PasswordEnv: "DPSTREAM_TEST_KAFKA_PW"}, "PLAIN", ""},
		{"scram-256 file", config.SASL{Mechanism: "SCRAM-SHA-256", Username: "u", PasswordFile: pwFile}, "SCRAM-SHA-256", ""},
		{"scram-512 env", config.SASL{Mechanism: "SCRAM-SHA-512", Username: "u", PasswordEnv: "DPSTREAM_TEST_KAFKA_PW"}, "SCRAM-SHA-512", ""},
		{"unset env", config.SASL{Mechanism: "PLAIN", Username: "u", PasswordEnv: "DPSTREAM_TEST_UNSET_VAR"}, "",
			"security.sasl.password_env: environment variable DPSTREAM_TEST_UNSET_VAR is unset or empty"},
		{"unknown", config.SASL{Mechanism: "GSSAPI", Username: "u", PasswordEnv: "DPSTREAM_TEST_KAFKA_PW"}, "",
			`security.sasl.mechanism: unknown mechanism "GSSAPI" (want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := Connect([]string{"k:9092"}, config.Security{SASL: tc.sasl})
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if conn.TLS() != nil || conn.Dialer().TLS != nil || conn.Transport().TLS != nil {
				t.Error("TLS set without tls settings")
			}
			if m := conn.Dialer().SASLMechanism; m == nil || m.Name() != tc.wantName {
				t.Fatalf("dialer mechanism = %v, want %s", m, tc.wantName)
			}
			if conn.Transport().SASL != conn.Dialer().SASLMechanism {
				t.Error("transport and dialer mechanisms differ")
			}
			if p, ok := conn.SASL().(plain.Mechanism); ok && (p.Username != "u" || p.Password != "from-env") {
				t.Errorf("PLAIN credentials = %q/%q", p.Username, p.Password)
			}
			if s, ok := conn.SASL().(*scramMechanism); ok {
				want := map[string]string{"SCRAM-SHA-256": "from-file", "SCRAM-SHA-512": "from-env"}[tc.wantName]
				if s.password != want {
					t.Errorf("SCRAM password = %q, want %q (file newline dropped)", s.password, want)
				}
			}
		})
	}
}

// TestPlaintextUnchanged checks that the zero settings leave kafka-go's
// defaults in place, as before security existed.
func TestPlaintextUnchanged(t *testing.T) {
	conn, err := Connect([]string{"k:9092"}, config.Security{})
	if err != nil {
		t.Fatal(err)
	}
	if conn.Dialer() != nil || conn.Transport() != nil || conn.TLS() != nil || conn.SASL() != nil {
		t.Fatal("zero security built a dialer, transport, TLS or SASL")
	}
	if w := conn.NewWriter("t"); w.Transport != nil {
		t.Error("plaintext writer has a transport; want kafka-go's default (nil)")
	}
	if cl := conn.Client(); cl.Transport != nil {
		t.Error("plaintext client has a transport; want kafka-go's default (nil)")
	}
}

// TestDescribe checks the security summary that `dpstream run` logs at
// startup and that connection errors carry.
func TestDescribe(t *testing.T) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	pm := plain.Mechanism{Username: "u", Password: "p"}
	for _, c := range []struct {
		conn *Connection
		want string
	}{
		{Plaintext([]string{"k:9092"}), "plaintext"},
		{NewConnection([]string{"k:9093"}, tc, nil), "TLS"},
		{NewConnection([]string{"k:9093"}, nil, pm), "SASL PLAIN"},
		{NewConnection([]string{"k:9093"}, tc, pm), "TLS, SASL PLAIN"},
	} {
		if got := c.conn.Describe(); got != c.want {
			t.Errorf("Describe() = %q, want %q", got, c.want)
		}
	}
}

// TestRunGroupNeedsConn checks that a consumer group without a connection
// is refused at once: there is no plaintext default that a caller could
// fall into by forgetting the configured security.
func TestRunGroupNeedsConn(t *testing.T) {
	for _, tc := range []struct {
		name string
		conn *Connection
	}{
		{"nil connection", nil},
		{"no brokers", Plaintext(nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := RunGroup(ctx, GroupConfig{Conn: tc.conn, GroupID: "g", Topics: []string{"t"}}, func(context.Context, Assignment) error { return nil })
			if err == nil || !strings.Contains(err.Error(), "no connection") {
				t.Fatalf("RunGroup = %v, want a missing-connection error", err)
			}
		})
	}
}

// TestScramRFCVectors replays the example exchanges of RFC 5802 section 5
// (SHA-1) and RFC 7677 section 3 (SHA-256): with the RFC's nonce and the
// server's messages, the client must send the RFC's client-final message
// and accept the RFC's server signature. The expected strings are copied
// from the RFCs, not produced by this code.
func TestScramRFCVectors(t *testing.T) {
	tests := []struct {
		name, nonce, serverFirst, clientFinal, serverFinal string
		mech                                               scramMechanism
	}{
		{
			name:        "RFC 7677 SHA-256",
			mech:        scramMechanism{name: "SCRAM-SHA-256", newHash: sha256New, username: "user", password: "pencil"},
			nonce:       "rOprNGfwEbeRWgbNEkqO",
			serverFirst: "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
			clientFinal: "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
			serverFinal: "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
		},
		{
			name:        "RFC 5802 SHA-1",
			mech:        scramMechanism{name: "SCRAM-SHA-1", newHash: sha1New, username: "user", password: "pencil"},
			nonce:       "fyko+d2lbbFgONRv9qkxdawL",
			serverFirst: "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096",
			clientFinal: "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
			serverFinal: "v=rmF9pqV8S7suAoZWja4dJRkFsKQ=",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.mech
			m.nonce = func() (string, error) { return tc.nonce, nil }
			sm, first, err := m.Start(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if want := "n,,n=user,r=" + tc.nonce; string(first) != want {
				t.Fatalf("client-first = %q, want %q", first, want)
			}
			done, final, err := sm.Next(context.Background(), []byte(tc.serverFirst))
			if err != nil || done {
				t.Fatalf("Next(server-first) = %v, %v", done, err)
			}
			if string(final) != tc.clientFinal {
				t.Fatalf("client-final = %q\nwant           %q", final, tc.clientFinal)
			}
			done, _, err = sm.Next(context.Background(), []byte(tc.serverFinal))
			if err != nil || !done {
				t.Fatalf("Next(server-final) = %v, %v; want done", done, err)
			}
		})
	}
}

// TestScramRejects checks that a bad server is refused: a wrong server
// signature (an impostor that does not know the credentials), a nonce that
// does not extend ours, an absurd iteration count and an error message.
func TestScramRejects(t *testing.T) {
	const nonce = "rOprNGfwEbeRWgbNEkqO"
	good := "r=" + nonce + "xyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
	tests := []struct {
		name, serverFirst, serverFinal, wantErr string
	}{
		{"wrong signature", good, "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=", "SCRAM-SHA-256: server signature does not verify; the broker may not be who it claims"},
		{"server error", good, "e=invalid-proof", "SCRAM-SHA-256: server rejected authentication: invalid-proof"},
		{"nonce not extended", "r=other,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "", "SCRAM-SHA-256: server nonce does not extend the client nonce"},
		{"nonce unchanged", "r=" + nonce + ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "", "SCRAM-SHA-256: server nonce does not extend the client nonce"},
		{"too many iterations", "r=" + nonce + "x,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=999999999", "", `SCRAM-SHA-256: iteration count "999999999" out of range 1..1048576`},
		{"malformed", "garbage", "", "SCRAM-SHA-256: malformed server-first message"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := scramMechanism{name: "SCRAM-SHA-256", newHash: sha256New, username: "user", password: "pencil",
				nonce: func() (string, error) { return nonce, nil }}
			sm, _, err := m.Start(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = sm.Next(context.Background(), []byte(tc.serverFirst))
			if err == nil && tc.serverFinal != "" {
				_, _, err = sm.Next(context.Background(), []byte(tc.serverFinal))
			}
			if err == nil || err.Error() != tc.wantErr {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// Hash constructors for the vectors.
var (
	sha256New = func() hash.Hash { return sha256.New() }
	sha1New   = func() hash.Hash { return sha1.New() }
)

// TestCheckDiagnoses checks that Connection.Check passes on a working
// connection and, on a failing one, names the step that failed: an
// unreachable broker, or TLS offered to a plaintext listener. The secured
// cases (wrong password, no TLS, untrusted CA, no SASL) run against a
// secured cluster in internal/e2e (TestSecurityRefused).
func TestCheckDiagnoses(t *testing.T) {
	e, err := StartEmbedded("127.0.0.1:0", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// A port nothing listens on: bind one, then free it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	cases := []struct {
		name string
		conn *Connection
		want string // "" = Check passes
	}{
		{"plaintext broker", e.Conn(), ""},
		{"unreachable", Plaintext([]string{closed}), "is unreachable"},
		{"TLS to a plaintext listener", NewConnection([]string{e.Addr()}, &tls.Config{MinVersion: tls.VersionTLS12}, nil), "TLS handshake with broker"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := tc.conn.Check(ctx)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Check = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Check = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
