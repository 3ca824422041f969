package pipeline

import (
	"crypto/tls"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go/sasl/plain"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/kafkaio"
)

// TestCheckConn checks that Run refuses a connection weaker than the
// config's security section (a caller that built its Connection without
// kafkaio.Connect must not run a secured config in plaintext) and a
// missing one, and accepts a matching one.
func TestCheckConn(t *testing.T) {
	brokers := []string{"kafka:9093"}
	tlsOn := config.TLS{Enabled: true}
	scram := config.SASL{Mechanism: config.SASLScramSHA512, Username: "u", PasswordEnv: "P"}
	plainSASL := config.SASL{Mechanism: config.SASLPlain, Username: "u", PasswordEnv: "P"}
	secured := kafkaio.NewConnection(brokers, &tls.Config{MinVersion: tls.VersionTLS12}, plain.Mechanism{Username: "u", Password: "p"})
	cases := []struct {
		name    string
		conn    *kafkaio.Connection
		sec     config.Security
		wantErr string // "" = accepted
	}{
		{"no connection", nil, config.Security{}, "no Kafka connection"},
		{"no brokers", kafkaio.Plaintext(nil), config.Security{}, "no Kafka connection"},
		{"plaintext config, plaintext conn", kafkaio.Plaintext(brokers), config.Security{}, ""},
		{"TLS config, plaintext conn", kafkaio.Plaintext(brokers), config.Security{TLS: tlsOn}, "security.tls"},
		{"SASL config, plaintext conn", kafkaio.Plaintext(brokers), config.Security{SASL: plainSASL}, "security.sasl"},
		{"SASL config, other mechanism", secured, config.Security{TLS: tlsOn, SASL: scram}, "SCRAM-SHA-512"},
		{"TLS and SASL config, matching conn", secured, config.Security{TLS: tlsOn, SASL: plainSASL}, ""},
		// More security than configured is not a downgrade.
		{"plaintext config, secured conn", secured, config.Security{}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := checkConn(tc.conn, tc.sec)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("checkConn = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("checkConn = %v, want an error mentioning %q", err, tc.wantErr)
			}
		})
	}
}
