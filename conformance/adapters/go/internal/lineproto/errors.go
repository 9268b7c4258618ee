package lineproto

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
)

// JavaNames maps Kafka's error codes (as both Go clients carry them: franz-go's kerr.Error.Code,
// pkg/kerr/kerr.go, e.g. RequestTimedOut = &Error{"REQUEST_TIMED_OUT", 7, ...}; sarama's KError,
// errors.go, e.g. ErrProducerFenced KError = 90) to the Java client's exception for the same error
// (org.apache.kafka.common.protocol.Errors). Only errors that are clearly the same are mapped.
var JavaNames = map[int16]string{
	3:  "UnknownTopicOrPartitionException",
	5:  "LeaderNotAvailableException",
	6:  "NotLeaderOrFollowerException",
	7:  "TimeoutException", // REQUEST_TIMED_OUT: Java raises org.apache.kafka.common.errors.TimeoutException
	10: "RecordTooLargeException",
	14: "CoordinatorLoadInProgressException",
	15: "CoordinatorNotAvailableException",
	16: "NotCoordinatorException",
	17: "InvalidTopicException",
	25: "UnknownMemberIdException",
	27: "RebalanceInProgressException",
	29: "TopicAuthorizationException",
	30: "GroupAuthorizationException",
	36: "TopicExistsException",
	41: "NotControllerException",
	47: "InvalidProducerEpochException",
	67: "InvalidRecordException",
	90: "ProducerFencedException", // PRODUCER_FENCED: kerr.ProducerFenced, sarama.ErrProducerFenced
}

// IsTimeout says whether err is a client-side deadline: a context deadline, or a socket
// read/write/dial that hit its deadline. Java reports both as TimeoutException.
func IsTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// GoName names a Go error by its dynamic type, the network error inside a wrapper when there is
// one (a refused dial is *net.OpError, not the *fmt.wrapError around it).
func GoName(err error) string {
	var op *net.OpError
	if errors.As(err, &op) {
		return "*net.OpError"
	}
	return fmt.Sprintf("%T", err)
}

// Message is the client's own words, prefixed with the client's own name of the error.
func Message(name string, err error) string {
	msg := err.Error()
	if name == "" || strings.HasPrefix(msg, name) {
		return msg
	}
	return name + ": " + msg
}
