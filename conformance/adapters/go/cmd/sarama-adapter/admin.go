package main

import (
	"time"

	"github.com/IBM/sarama"

	"brokeremu/goadapters/internal/lineproto"
)

// The admin steps with a server-side deadline (conformance/scenarios_admin.py). sarama's
// ClusterAdmin calls take no deadline; Admin.Timeout is the timeout_ms it puts in CreateTopics and
// DeleteRecords (admin.go: NewCreateTopicsRequest(..., ca.conf.Admin.Timeout, ...) and
// DeleteRecordsRequest{Timeout: ca.conf.Admin.Timeout}), the broker's deadline for the call. The
// step's deadline becomes Admin.Timeout, as librdkafka's operation_timeout, and Net.ReadTimeout
// (request.timeout.ms, 40 s in these scenarios) stays longer, so the broker's answer at that
// deadline is what comes back (conformance/adapters/admin_steps.py does the same for confluent-kafka
// and kafka-python).
//
//	create_topics    ClusterAdmin.CreateTopic(topic, &TopicDetail{partitions, replication_factor}, false)
//	delete_records   ClusterAdmin.DeleteRecords(topic, {partition: offset})
//
// Errors: CreateTopic returns the topic's *TopicError, which unwraps to its KError
// (create_topics_response.go TopicError.Unwrap); DeleteRecords returns Wrap(ErrDeleteRecords,
// errs...), whose Unwrap is errors.Join of the partitions' KErrors (errors.go Wrap). errorName finds
// the KError with errors.As: REQUEST_TIMED_OUT (7) is TimeoutException through JavaNames.

// withAdmin: a ClusterAdmin (on a client created before the timed call) whose Admin.Timeout is the
// step's deadline; the call is timed around fn.
func withAdmin(run *lineproto.Run, step lineproto.Step, fn func(sarama.ClusterAdmin) (any, error)) lineproto.Outcome {
	start := time.Now()
	cfg := config(run)
	if d, ok := step.Timeout(); ok {
		cfg.Admin.Timeout = d
	}
	client, err := newClient(run, cfg)
	if err != nil {
		return notCreated(step.Kind, start, err)
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		closeSoon("client", client.Close)
		return notCreated(step.Kind, start, err)
	}
	defer closeSoon("admin", admin.Close)
	return lineproto.Timed(step.Kind, func() (any, error) { return fn(admin) }, errorName)
}

func createTopics(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	return withAdmin(run, step, func(admin sarama.ClusterAdmin) (any, error) {
		detail := &sarama.TopicDetail{NumPartitions: int32(lineproto.ArgInt(step.Args, "partitions", 1)),
			ReplicationFactor: int16(lineproto.ArgInt(step.Args, "replication_factor", 1))}
		return nil, admin.CreateTopic(lineproto.ArgStr(step.Args, "topic", "t"), detail, false)
	})
}

func deleteRecords(run *lineproto.Run, step lineproto.Step) lineproto.Outcome {
	return withAdmin(run, step, func(admin sarama.ClusterAdmin) (any, error) {
		p := int32(lineproto.ArgInt(step.Args, "partition", 0))
		return nil, admin.DeleteRecords(lineproto.ArgStr(step.Args, "topic", "t"),
			map[int32]int64{p: lineproto.ArgInt(step.Args, "offset", -1)})
	})
}
