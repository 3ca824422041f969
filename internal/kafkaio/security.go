package kafkaio

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"

	"github.com/dpstream/dpstream/internal/config"
)

// Connection is how dpstream reaches one Kafka cluster: the bootstrap
// brokers and the TLS and SASL settings of every connection to them. Every
// Writer, Reader, ConsumerGroup and Client this package builds from a
// Connection uses its Dialer or Transport, so one value decides the
// security of all stage I/O.
//
// A Connection is passed explicitly rather than kept in a package-level
// variable: tests and `dpstream demo` run several pipelines (and the
// embedded broker) in one process, and a global would let one of them
// silently change how another connects. Nor is there any function that
// takes a bare broker list: every Kafka operation is a method of
// Connection (or needs one, like GroupConfig.Conn), so a plaintext
// connection is always spelt Plaintext(brokers) at the call site, where a
// reviewer sees it. dpstream itself calls Plaintext only for its embedded
// broker (Embedded.Conn), which serves plaintext on loopback.
//
// A Connection is safe for concurrent use and must not be modified after
// it is built. Close it when done, to release pooled connections.
type Connection struct {
	// Brokers are the bootstrap brokers, host:port.
	Brokers []string

	tls  *tls.Config
	sasl sasl.Mechanism
	// dialer and transport are nil for plaintext, so that kafka-go's
	// defaults (and their shared connection pool) are used exactly as
	// before; otherwise one of each is shared by everything built from
	// the Connection, so connections are pooled rather than opened per
	// request.
	dialer    *kafka.Dialer
	transport *kafka.Transport
}

// Plaintext returns a Connection without TLS or SASL: for the embedded
// broker, tests, and clusters configured without a security section.
func Plaintext(brokers []string) *Connection { return &Connection{Brokers: brokers} }

// NewConnection returns a Connection that uses tlsConfig (nil: no TLS) and
// the SASL mechanism mech (nil: no authentication). tlsConfig is used as
// is; kafka-go fills in ServerName from each broker's host when it is "".
func NewConnection(brokers []string, tlsConfig *tls.Config, mech sasl.Mechanism) *Connection {
	c := &Connection{Brokers: brokers, tls: tlsConfig, sasl: mech}
	if tlsConfig == nil && mech == nil {
		return c
	}
	c.dialer = &kafka.Dialer{
		// kafka.DefaultDialer's settings, plus security.
		Timeout:       10 * time.Second,
		DualStack:     true,
		TLS:           tlsConfig,
		SASLMechanism: mech,
	}
	c.transport = &kafka.Transport{TLS: tlsConfig, SASL: mech}
	return c
}

// Connect builds the Connection a parsed config describes: it loads the
// TLS files and reads the SASL password (from the environment variable or
// file the config names) now, so that a missing secret fails at startup
// rather than at the first request. The zero config.Security gives
// Plaintext(brokers).
func Connect(brokers []string, sec config.Security) (*Connection, error) {
	tlsConfig, err := TLSConfig(sec.TLS)
	if err != nil {
		return nil, err
	}
	mech, err := SASLMechanism(sec.SASL)
	if err != nil {
		return nil, err
	}
	return NewConnection(brokers, tlsConfig, mech), nil
}

// TLSConfig turns the TLS settings into a *tls.Config, or nil when TLS is
// off. It requires TLS 1.2 or later. config.Parse has already checked the
// files; they are read again here because they may have changed since.
func TLSConfig(t config.TLS) (*tls.Config, error) {
	if !t.Enabled {
		return nil, nil
	}
	c := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         t.ServerName,
		InsecureSkipVerify: t.InsecureSkipVerify, //nolint:gosec // opt-in, warned about by config.Parse
	}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("security.tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("security.tls.ca_file %s: no PEM certificate found", t.CAFile)
		}
		c.RootCAs = pool
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return nil, fmt.Errorf("security.tls: cert_file and key_file must be given together")
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("security.tls client certificate %s, key %s: %w", t.CertFile, t.KeyFile, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// SASLMechanism turns the SASL settings into a kafka-go mechanism, or nil
// when SASL is off, reading the password from the environment variable or
// file the settings name. A password file's trailing newline is dropped, as
// files written by editors and `echo` have one. An empty password is an
// error: it is almost always an unset variable, not a real password.
func SASLMechanism(s config.SASL) (sasl.Mechanism, error) {
	if s.Mechanism == "" {
		return nil, nil
	}
	var password string
	switch {
	case s.PasswordEnv != "":
		password = os.Getenv(s.PasswordEnv)
		if password == "" {
			return nil, fmt.Errorf("security.sasl.password_env: environment variable %s is unset or empty", s.PasswordEnv)
		}
	case s.PasswordFile != "":
		data, err := os.ReadFile(s.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("security.sasl.password_file: %w", err)
		}
		password = strings.TrimRight(string(data), "\r\n")
		if password == "" {
			return nil, fmt.Errorf("security.sasl.password_file %s is empty", s.PasswordFile)
		}
	default:
		return nil, fmt.Errorf("security.sasl: no password_env or password_file")
	}
	switch s.Mechanism {
	case config.SASLPlain:
		return plain.Mechanism{Username: s.Username, Password: password}, nil
	case config.SASLScramSHA256, config.SASLScramSHA512:
		m, err := newScram(s.Mechanism, s.Username, password)
		if err != nil {
			return nil, fmt.Errorf("security.sasl: %w", err)
		}
		return m, nil
	default:
		return nil, fmt.Errorf("security.sasl.mechanism: unknown mechanism %q (want %s, %s or %s)", s.Mechanism, config.SASLPlain, config.SASLScramSHA256, config.SASLScramSHA512)
	}
}

// TLS returns the connection's TLS config, nil for none. Do not modify it.
func (c *Connection) TLS() *tls.Config { return c.tls }

// SASL returns the connection's SASL mechanism, nil for none.
func (c *Connection) SASL() sasl.Mechanism { return c.sasl }

// Dialer returns the dialer for Readers, ConsumerGroups and Conns: nil for
// plaintext (kafka-go then uses kafka.DefaultDialer).
func (c *Connection) Dialer() *kafka.Dialer { return c.dialer }

// Transport returns the transport for Writers and Clients: nil for
// plaintext (kafka-go then uses kafka.DefaultTransport).
func (c *Connection) Transport() *kafka.Transport { return c.transport }

// roundTripper is Transport as the interface Writer and Client hold,
// with an untyped nil for plaintext: a nil *kafka.Transport in the
// interface would not be replaced by the default and would crash.
func (c *Connection) roundTripper() kafka.RoundTripper {
	if c.transport == nil {
		return nil
	}
	return c.transport
}

// Close closes the idle pooled connections of a secured Connection. It is
// a no-op for plaintext, whose pool is kafka-go's shared default.
func (c *Connection) Close() {
	if c.transport != nil {
		c.transport.CloseIdleConnections()
	}
}

// Check asks the brokers for the cluster's metadata over c, so that a
// connection that cannot work (unreachable brokers, a TLS mismatch, failed
// authentication) is reported when dpstream starts, with what to check,
// instead of as a later request's "Broker Not Available" or "unexpected
// EOF": kafka-go's transport hides which step failed, and brokers refuse a
// TLS or SASL mismatch by closing the connection. When the request fails,
// Check connects to the first broker again step by step (TCP, TLS, SASL,
// a metadata request) to say which step failed.
func (c *Connection) Check(ctx context.Context) error {
	if _, err := c.Client().Metadata(ctx, &kafka.MetadataRequest{}); err != nil {
		err = fmt.Errorf("connect to Kafka brokers %s (%s): %w", strings.Join(c.Brokers, ","), c.Describe(), err)
		if d := c.diagnose(ctx); d != "" {
			err = fmt.Errorf("%w; %s", err, d)
		}
		return err
	}
	return nil
}

// probeTimeout bounds each step of diagnose.
const probeTimeout = 5 * time.Second

// diagnose connects to the first broker step by step and returns which
// step fails and what to check, or "" when every step succeeds (the
// failure was transient or elsewhere).
func (c *Connection) diagnose(ctx context.Context) string {
	if len(c.Brokers) == 0 {
		return ""
	}
	addr := c.Brokers[0]
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Sprintf("broker address %q: %v", addr, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 3*probeTimeout)
	defer cancel()
	nd := &net.Dialer{Timeout: probeTimeout}
	raw, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Sprintf("broker %s is unreachable: %v", addr, err)
	}
	raw.Close()
	if c.tls == nil {
		// Only detects a TLS listener; nothing is sent over it. A TLS
		// server answers the ClientHello at once, while a plaintext one
		// may wait for the rest of what it takes for a request: a short
		// bound.
		probe := &tls.Dialer{NetDialer: nd, Config: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // detection only, no data sent
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		tc, err := probe.DialContext(pctx, "tcp", addr)
		pcancel()
		if err == nil {
			tc.Close()
			return fmt.Sprintf("broker %s expects TLS: set security.tls (with ca_file for a private CA)", addr)
		}
	} else {
		cfg := c.tls.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName = host // as kafka-go does
		}
		tc, err := (&tls.Dialer{NetDialer: nd, Config: cfg}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return fmt.Sprintf("TLS handshake with broker %s failed: %v; check security.tls (ca_file, server_name) and that %s is the brokers' TLS listener", addr, err, addr)
		}
		tc.Close()
	}
	d := c.dialer
	if d == nil {
		d = &kafka.Dialer{Timeout: probeTimeout, DualStack: true}
	}
	kc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if c.sasl != nil {
			return fmt.Sprintf("SASL %s authentication with broker %s failed (%v): check security.sasl (username, the password, the mechanism) against the credentials the brokers hold", c.sasl.Name(), addr, err)
		}
		return fmt.Sprintf("connecting to broker %s: %v", addr, err)
	}
	defer kc.Close()
	_ = kc.SetDeadline(time.Now().Add(probeTimeout))
	// A metadata request: brokers answer ApiVersions before
	// authentication, but not this.
	if _, err := kc.Brokers(); err != nil {
		if c.sasl == nil {
			return fmt.Sprintf("broker %s closed the connection (%v): if it requires authentication, set security.sasl", addr, err)
		}
		return fmt.Sprintf("broker %s refused a request after SASL %s authentication: %v", addr, c.sasl.Name(), err)
	}
	return ""
}

// Describe names the connection's security for logs and errors:
// "plaintext", "TLS", "SASL SCRAM-SHA-512" or "TLS, SASL PLAIN".
func (c *Connection) Describe() string {
	var parts []string
	if c.tls != nil {
		parts = append(parts, "TLS")
	}
	if c.sasl != nil {
		parts = append(parts, "SASL "+c.sasl.Name())
	}
	if len(parts) == 0 {
		return "plaintext"
	}
	return strings.Join(parts, ", ")
}
