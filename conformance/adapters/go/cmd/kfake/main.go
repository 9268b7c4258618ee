// Command kfake starts franz-go's in-process fake Kafka cluster (github.com/twmb/franz-go/pkg/kfake)
// on 127.0.0.1, prints "bootstrap=host:port,..." on stdout, and runs until stdin closes or it
// receives SIGTERM/SIGINT. Used by benchmarks/broker.py and by hand (docs/kfake.md).
//
//	kfake [-brokers 3] [-topic t:3 ...] [-auto-create] [-group-min-session-ms 6000]
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

type topics []string

func (t *topics) String() string     { return strings.Join(*t, ",") }
func (t *topics) Set(v string) error { *t = append(*t, v); return nil }

func version() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == "github.com/twmb/franz-go/pkg/kfake" {
				return d.Version
			}
		}
	}
	return "unknown"
}

func main() {
	brokers := flag.Int("brokers", 3, "number of brokers")
	autoCreate := flag.Bool("auto-create", false, "allow topics to be created by Metadata requests")
	minSession := flag.Int("group-min-session-ms", 6000, "group.min.session.timeout.ms")
	var seeds topics
	flag.Var(&seeds, "topic", "name:partitions to create at start (repeatable)")
	flag.Parse()

	opts := []kfake.Opt{kfake.NumBrokers(*brokers), kfake.GroupMinSessionTimeout(time.Duration(*minSession) * time.Millisecond)}
	if *autoCreate {
		opts = append(opts, kfake.AllowAutoTopicCreation())
	}
	for _, s := range seeds {
		name, parts, _ := strings.Cut(s, ":")
		n, err := strconv.Atoi(parts)
		if err != nil {
			n = 1
		}
		opts = append(opts, kfake.SeedTopics(int32(n), name))
	}
	cluster, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfake:", err)
		os.Exit(1)
	}
	defer cluster.Close()
	fmt.Printf("bootstrap=%s\n", strings.Join(cluster.ListenAddrs(), ","))
	fmt.Fprintf(os.Stderr, "kfake %s: %d brokers up\n", version(), *brokers)

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	eof := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(eof) }()
	select {
	case <-stop:
	case <-eof:
	}
}
