package config

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// envName is a portable environment variable name (POSIX: letters, digits
// and underscore, not starting with a digit).
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// SASL mechanisms (SASL.Mechanism), spelled as Kafka spells them.
const (
	// SASLPlain sends the username and password as they are; use it only
	// over TLS.
	SASLPlain = "PLAIN"
	// SASLScramSHA256 is SCRAM with SHA-256 (RFC 5802, RFC 7677).
	SASLScramSHA256 = "SCRAM-SHA-256"
	// SASLScramSHA512 is SCRAM with SHA-512.
	SASLScramSHA512 = "SCRAM-SHA-512"
)

var (
	securityKeys   = []string{"tls", "sasl"}
	tlsKeys        = []string{"enabled", "ca_file", "cert_file", "key_file", "server_name", "insecure_skip_verify"}
	saslKeys       = []string{"mechanism", "username", "password_env", "password_file"}
	saslMechanisms = []string{SASLPlain, SASLScramSHA256, SASLScramSHA512}
)

// maxSecretFileBytes bounds the size of a certificate, key or password file
// read for checking, so that a wrong path (a log, a device) is not read into
// memory. Real PEM bundles are a few hundred kilobytes at most.
const maxSecretFileBytes = 4 << 20

// Security configures how dpstream authenticates to the Kafka brokers and
// encrypts its connections (yaml security). The zero value is plaintext
// without authentication, as before the section existed. It applies to every
// connection dpstream makes: producers, readers, the consumer group and the
// admin requests.
//
// Security protects the raw input topics, which hold identifying events, in
// transit and lets the brokers enforce topic ACLs per principal; it does not
// change any privacy guarantee of the releases.
type Security struct {
	TLS  TLS
	SASL SASL
	Line int // line of the security mapping; 0 when absent
}

// Enabled reports whether any security setting is on.
func (s Security) Enabled() bool { return s.TLS.Enabled || s.SASL.Mechanism != "" }

// TLS configures TLS for the broker connections (yaml security.tls). Paths
// are resolved against the config file's directory and checked by Parse:
// they must exist and hold PEM.
type TLS struct {
	// Enabled turns TLS on. It defaults to true when the tls section is
	// present, so that a section with a CA but no enabled: true does not
	// silently connect in plaintext.
	Enabled bool
	// CAFile is a PEM bundle of CA certificates that verify the brokers
	// (yaml ca_file); "" uses the system roots.
	CAFile string
	// CertFile and KeyFile are the client certificate and its private key
	// for mutual TLS (yaml cert_file, key_file); both or neither.
	CertFile string
	KeyFile  string
	// ServerName is the name the brokers' certificates must carry (yaml
	// server_name); "" uses the host of each broker address.
	ServerName string
	// InsecureSkipVerify disables verification of the brokers'
	// certificates (yaml insecure_skip_verify). It is allowed for testing
	// but Parse records a warning (Config.Warnings): without verification
	// anyone on the path can impersonate the broker and read raw events.
	InsecureSkipVerify bool
}

// SASL configures SASL authentication (yaml security.sasl). The password is
// never in the file: PasswordEnv names an environment variable, or
// PasswordFile a file, that holds it; exactly one is set. It is read when
// connecting (kafkaio), not by Parse, so `dpstream check` works without it.
type SASL struct {
	Mechanism    string // PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; "" = no SASL
	Username     string
	PasswordEnv  string // yaml password_env: name of the environment variable
	PasswordFile string // yaml password_file: resolved against the config file's directory
}

// security reads the security section. It runs after the brokers are read:
// the embedded broker serves plaintext only, so security needs brokers.
// brokersGiven reports whether the file lists any broker, valid or not, so
// that a misspelt broker is not also reported as "embedded".
func (d *decoder) security(v *yaml.Node, c *Config, brokersGiven bool) {
	m := d.mappingOf(v, "security", securityKeys, nil)
	if m == nil {
		return
	}
	c.Security.Line = m.line
	if !brokersGiven {
		d.errorf(m.line, "security", "is not supported with the embedded broker, which serves plaintext only on loopback; set brokers to use a secured cluster, or remove security")
	}
	if t := m.value("tls"); t != nil {
		d.tlsSection(d.mappingOf(t, "security.tls", tlsKeys, nil), &c.Security.TLS)
	}
	if s := m.value("sasl"); s != nil {
		d.saslSection(d.mappingOf(s, "security.sasl", saslKeys, nil), &c.Security)
	}
}

// resolvePath makes p absolute against the config file's directory.
func (d *decoder) resolvePath(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(d.dir, p)
}

// tlsSection reads security.tls.
func (d *decoder) tlsSection(m *mapping, t *TLS) {
	if m == nil {
		return
	}
	t.Enabled = true
	if b, ok := d.boolean(m, "enabled"); ok {
		t.Enabled = b
	}
	if !t.Enabled {
		for _, k := range tlsKeys[1:] {
			if m.has(k) {
				d.errorf(m.values[k].Line, join(m.path, k), "is set but security.tls.enabled is false; remove it or enable TLS")
			}
		}
		return
	}
	file := func(key, what string, check func([]byte) string) (string, int) {
		s, line, ok := d.str(m, key)
		if !ok {
			return "", 0
		}
		if strings.TrimSpace(s) == "" {
			d.errorf(line, join(m.path, key), "must be the path of a PEM file (leave it out if unused)")
			return "", 0
		}
		p := d.resolvePath(s)
		data, msg := readSmallFile(p, what)
		if msg == "" {
			msg = check(data)
			if msg != "" {
				msg = what + " " + strconv.Quote(p) + " " + msg
			}
		}
		if msg != "" {
			d.errorf(line, join(m.path, key), "%s", msg)
			return "", 0
		}
		return p, line
	}
	t.CAFile, _ = file("ca_file", "CA file", checkCAPEM)
	cert, certLine := file("cert_file", "certificate file", checkPEMType("CERTIFICATE"))
	key, keyLine := file("key_file", "key file", checkPEMType("PRIVATE KEY"))
	switch {
	case m.has("cert_file") && !m.has("key_file"):
		d.errorf(m.values["cert_file"].Line, join(m.path, "key_file"), "required with cert_file: the client certificate's private key")
	case m.has("key_file") && !m.has("cert_file"):
		d.errorf(m.values["key_file"].Line, join(m.path, "cert_file"), "required with key_file: the client certificate")
	case cert != "" && key != "":
		if _, err := tls.LoadX509KeyPair(cert, key); err != nil {
			d.errorf(keyLine, join(m.path, "key_file"), "does not match cert_file (line %d): %s", certLine, err)
		} else {
			t.CertFile, t.KeyFile = cert, key
		}
	}
	if s, _, ok := d.str(m, "server_name"); ok {
		t.ServerName = s
	}
	if b, ok := d.boolean(m, "insecure_skip_verify"); ok && b {
		t.InsecureSkipVerify = true
		d.warnf(m.values["insecure_skip_verify"].Line, join(m.path, "insecure_skip_verify"),
			"broker certificates are not verified: anyone on the network path can impersonate the broker and read raw events; use only for testing")
	}
}

// saslSection reads security.sasl.
func (d *decoder) saslSection(m *mapping, sec *Security) {
	if m == nil {
		return
	}
	s := &sec.SASL
	d.require(m, "mechanism", "username")
	if mech, line, ok := d.str(m, "mechanism"); ok {
		if contains(saslMechanisms, mech) {
			s.Mechanism = mech
		} else {
			d.errorf(line, join(m.path, "mechanism"), "%q is not one of %s%s", mech, strings.Join(saslMechanisms, ", "), didYouMean(mech, saslMechanisms))
		}
	}
	if u, line, ok := d.str(m, "username"); ok {
		if strings.TrimSpace(u) == "" {
			d.errorf(line, join(m.path, "username"), "must not be empty")
		} else {
			s.Username = u
		}
	}
	hasEnv, hasFile := m.has("password_env"), m.has("password_file")
	switch {
	case hasEnv && hasFile:
		d.errorf(m.values["password_file"].Line, m.path, "give one of password_env and password_file (line %d), not both", m.values["password_env"].Line)
	case !hasEnv && !hasFile:
		d.errorf(m.line, m.path, "needs password_env (the name of an environment variable holding the password) or password_file; the password itself never goes in the file")
	case hasEnv:
		if e, line, ok := d.str(m, "password_env"); ok {
			if !envName.MatchString(e) {
				d.errorf(line, join(m.path, "password_env"), "%q is not an environment variable name (letters, digits and _, e.g. KAFKA_PASSWORD); the password itself never goes in the file", e)
			} else {
				s.PasswordEnv = e
			}
		}
	case hasFile:
		if f, line, ok := d.str(m, "password_file"); ok {
			p := d.resolvePath(f)
			if _, msg := readSmallFile(p, "password file"); msg != "" {
				d.errorf(line, join(m.path, "password_file"), "%s", msg)
			} else {
				s.PasswordFile = p
			}
		}
	}
	if s.Mechanism == SASLPlain && !sec.TLS.Enabled {
		d.warnf(m.values["mechanism"].Line, join(m.path, "mechanism"),
			"PLAIN without security.tls sends the password in clear text; enable TLS")
	}
}

// readSmallFile reads a regular file of at most maxSecretFileBytes, or
// returns why it cannot.
func readSmallFile(p, what string) ([]byte, string) {
	q := strconv.Quote(p)
	info, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, what + " " + q + " does not exist (relative paths are resolved from the config file's directory)"
	case err != nil:
		return nil, "cannot read " + what + " " + q + ": " + causeOf(err)
	case !info.Mode().IsRegular():
		return nil, what + " " + q + " is not a regular file"
	case info.Size() > maxSecretFileBytes:
		return nil, what + " " + q + " is larger than 4 MiB"
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, "cannot read " + what + " " + q + ": " + causeOf(err)
	}
	return data, ""
}

// checkCAPEM returns why data is not a PEM bundle of certificates, or "".
func checkCAPEM(data []byte) string {
	if !x509.NewCertPool().AppendCertsFromPEM(data) {
		return "holds no PEM certificate"
	}
	return ""
}

// checkPEMType returns a check that data holds a PEM block whose type ends
// in suffix ("CERTIFICATE"; "PRIVATE KEY" matches PKCS#8, RSA and EC keys).
func checkPEMType(suffix string) func([]byte) string {
	return func(data []byte) string {
		for {
			var b *pem.Block
			b, data = pem.Decode(data)
			if b == nil {
				return "holds no PEM " + strings.ToLower(suffix)
			}
			if strings.HasSuffix(b.Type, suffix) {
				return ""
			}
		}
	}
}
