package main

import (
	"context"

	"github.com/IBM/sarama"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"brokeremu/goadapters/internal/lineproto"
)

// saslConfig: security.protocol SASL_PLAINTEXT with sasl.mechanism PLAIN or SCRAM-SHA-256/512,
// sasl.username and sasl.password -> Net.SASL (handshake v1, SaslAuthenticate, as Kafka 2.0+).
// sarama brings no SCRAM client of its own: scramClient runs franz-go's (pkg/sasl/scram)
// behind sarama's SCRAMClient interface.
func saslConfig(run *lineproto.Run, c *sarama.Config) {
	if run.Str("security.protocol", "PLAINTEXT") != "SASL_PLAINTEXT" {
		return
	}
	c.Net.SASL.Enable = true
	c.Net.SASL.Handshake = true
	c.Net.SASL.Version = sarama.SASLHandshakeV1
	c.Net.SASL.User = run.Str("sasl.username", "")
	c.Net.SASL.Password = run.Str("sasl.password", "")
	switch run.Str("sasl.mechanism", "PLAIN") {
	case "SCRAM-SHA-256":
		c.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA256
		c.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{sha512: false} }
	case "SCRAM-SHA-512":
		c.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
		c.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{sha512: true} }
	default:
		c.Net.SASL.Mechanism = sarama.SASLTypePlaintext
	}
}

// scramClient: sarama calls Begin, then Step("") for the client-first message, then Step with
// each server message until Done.
type scramClient struct {
	sha512  bool
	session kgosasl.Session
	first   []byte
	done    bool
}

func (s *scramClient) Begin(user, pass, authz string) error {
	auth := scram.Auth{User: user, Pass: pass, Zid: authz}
	mech := auth.AsSha256Mechanism()
	if s.sha512 {
		mech = auth.AsSha512Mechanism()
	}
	session, first, err := mech.Authenticate(context.Background(), "")
	s.session, s.first = session, first
	return err
}

func (s *scramClient) Step(challenge string) (string, error) {
	if challenge == "" && s.first != nil {
		first := s.first
		s.first = nil
		return string(first), nil
	}
	done, msg, err := s.session.Challenge([]byte(challenge))
	s.done = done
	return string(msg), err
}

func (s *scramClient) Done() bool { return s.done }
