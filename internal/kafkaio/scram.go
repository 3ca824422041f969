package kafkaio

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"

	"github.com/segmentio/kafka-go/sasl"
)

// This file is a SCRAM client (RFC 5802, with the SHA-256 variant of RFC
// 7677 and SHA-512 as Kafka names it in KIP-84), written against the RFCs.
// kafka-go's sasl/scram package would do, but it needs github.com/xdg-go/scram
// listed in go.mod, which this change may not edit; the protocol is small
// and the RFCs' test vectors check it (scram_test.go).
//
// Limitation: usernames and passwords are not SASLprep-normalised (RFC
// 4013). For ASCII text without control characters SASLprep is the
// identity, so newScram rejects anything else rather than risk a silent
// mismatch with the broker's stored credentials.

// maxScramIterations bounds the PBKDF2 iteration count a server may ask
// for, so that a hostile or misconfigured broker cannot make each
// connection burn minutes of CPU. Kafka allows at most 16384.
const maxScramIterations = 1 << 20

// scramMechanism implements sasl.Mechanism for one SCRAM variant.
type scramMechanism struct {
	name     string
	newHash  func() hash.Hash
	username string
	password string
	// nonce returns the client nonce; tests fix it to replay RFC vectors.
	nonce func() (string, error)
}

// newScram returns the SCRAM mechanism name ("SCRAM-SHA-256" or
// "SCRAM-SHA-512") for the credentials.
func newScram(name, username, password string) (sasl.Mechanism, error) {
	var h func() hash.Hash
	switch name {
	case "SCRAM-SHA-256":
		h = sha256.New
	case "SCRAM-SHA-512":
		h = sha512.New
	default:
		return nil, fmt.Errorf("unknown SCRAM mechanism %q", name)
	}
	for _, f := range []struct{ what, s string }{{"username", username}, {"password", password}} {
		what := f.what
		for _, r := range f.s {
			if r < 0x20 || r > 0x7e {
				return nil, fmt.Errorf("%s: SCRAM %s must be printable ASCII (SASLprep of other text is not implemented)", name, what)
			}
		}
	}
	return &scramMechanism{name: name, newHash: h, username: username, password: password, nonce: randomNonce}, nil
}

// randomNonce returns 24 random bytes, base64 encoded (printable, no ',').
func randomNonce() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("scram nonce: %w", err)
	}
	return base64.RawStdEncoding.EncodeToString(b), nil
}

// Name returns the mechanism name sent in the SASL handshake.
func (m scramMechanism) Name() string { return m.name }

// Start sends the client-first message: no channel binding ("n,,"), the
// escaped username and the client nonce.
func (m scramMechanism) Start(context.Context) (sasl.StateMachine, []byte, error) {
	nonce, err := m.nonce()
	if err != nil {
		return nil, nil, err
	}
	user := strings.NewReplacer("=", "=3D", ",", "=2C").Replace(m.username)
	bare := "n=" + user + ",r=" + nonce
	return &scramState{m: m, nonce: nonce, clientFirstBare: bare}, []byte("n,," + bare), nil
}

// scramState is one SCRAM exchange.
type scramState struct {
	m               scramMechanism
	nonce           string
	clientFirstBare string
	serverSignature []byte // set after the client-final message
	step            int
}

// Next answers the server-first message with the client proof, then checks
// the server's signature in the server-final message, which proves that
// the broker knows the credentials too (mutual authentication).
func (s *scramState) Next(_ context.Context, challenge []byte) (bool, []byte, error) {
	switch s.step {
	case 0:
		s.step++
		resp, err := s.clientFinal(string(challenge))
		return false, resp, err
	case 1:
		s.step++
		msg := string(challenge)
		if e, ok := strings.CutPrefix(msg, "e="); ok {
			return false, nil, fmt.Errorf("%s: server rejected authentication: %s", s.m.name, e)
		}
		v, ok := strings.CutPrefix(msg, "v=")
		if !ok {
			return false, nil, fmt.Errorf("%s: malformed server-final message", s.m.name)
		}
		sig, err := base64.StdEncoding.DecodeString(v)
		if err != nil || subtle.ConstantTimeCompare(sig, s.serverSignature) != 1 {
			return false, nil, fmt.Errorf("%s: server signature does not verify; the broker may not be who it claims", s.m.name)
		}
		return true, nil, nil
	default:
		return false, nil, fmt.Errorf("%s: unexpected message after authentication", s.m.name)
	}
}

// clientFinal computes the client-final message for serverFirst
// (RFC 5802 section 3).
func (s *scramState) clientFinal(serverFirst string) ([]byte, error) {
	name := s.m.name
	if e, ok := strings.CutPrefix(serverFirst, "e="); ok {
		return nil, fmt.Errorf("%s: server rejected authentication: %s", name, e)
	}
	attrs := strings.Split(serverFirst, ",")
	if len(attrs) < 3 || !strings.HasPrefix(attrs[0], "r=") || !strings.HasPrefix(attrs[1], "s=") || !strings.HasPrefix(attrs[2], "i=") {
		return nil, fmt.Errorf("%s: malformed server-first message", name)
	}
	serverNonce := attrs[0][2:]
	if !strings.HasPrefix(serverNonce, s.nonce) || len(serverNonce) == len(s.nonce) {
		return nil, errors.New(name + ": server nonce does not extend the client nonce")
	}
	salt, err := base64.StdEncoding.DecodeString(attrs[1][2:])
	if err != nil || len(salt) == 0 {
		return nil, fmt.Errorf("%s: bad salt in server-first message", name)
	}
	iter, err := strconv.Atoi(attrs[2][2:])
	if err != nil || iter < 1 || iter > maxScramIterations {
		return nil, fmt.Errorf("%s: iteration count %q out of range 1..%d", name, attrs[2][2:], maxScramIterations)
	}
	salted, err := pbkdf2.Key(s.m.newHash, s.m.password, salt, iter, s.m.newHash().Size())
	if err != nil {
		return nil, fmt.Errorf("%s: derive key: %w", name, err)
	}
	mac := func(key []byte, msg string) []byte {
		h := hmac.New(s.m.newHash, key)
		h.Write([]byte(msg))
		return h.Sum(nil)
	}
	clientKey := mac(salted, "Client Key")
	h := s.m.newHash()
	h.Write(clientKey)
	storedKey := h.Sum(nil)
	withoutProof := "c=biws,r=" + serverNonce // biws = base64("n,,")
	authMessage := s.clientFirstBare + "," + serverFirst + "," + withoutProof
	proof := mac(storedKey, authMessage)
	for i := range proof {
		proof[i] ^= clientKey[i]
	}
	s.serverSignature = mac(mac(salted, "Server Key"), authMessage)
	return []byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof)), nil
}
