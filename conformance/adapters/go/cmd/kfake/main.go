// Command kfake starts franz-go's in-process fake Kafka cluster (github.com/twmb/franz-go/pkg/kfake)
// on 127.0.0.1, prints "bootstrap=host:port,..." on stdout, and runs until stdin closes or it
// receives SIGTERM/SIGINT. Used by benchmarks/broker.py and by hand (docs/kfake.md).
//
//	kfake [-brokers 3] [-topic t:3 ...] [-auto-create] [-group-min-session-ms 6000]
//	      [-sasl METHOD:USER:PASS] [-tls-dir DIR]
//
// -sasl turns on kfake's SASL (kfake.EnableSASL) with that superuser; -tls-dir serves TLS with
// DIR/cert.pem and DIR/key.pem (kfake.TLS). tools/api_coverage.py measures both.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
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
	sasl := flag.String("sasl", "", "METHOD:USER:PASS: enable SASL with this superuser")
	tlsDir := flag.String("tls-dir", "", "serve TLS with cert.pem and key.pem from this folder")
	var seeds topics
	flag.Var(&seeds, "topic", "name:partitions to create at start (repeatable)")
	flag.Parse()

	opts := []kfake.Opt{kfake.NumBrokers(*brokers), kfake.GroupMinSessionTimeout(time.Duration(*minSession) * time.Millisecond)}
	if *autoCreate {
		opts = append(opts, kfake.AllowAutoTopicCreation())
	}
	if *sasl != "" {
		parts := strings.SplitN(*sasl, ":", 3)
		if len(parts) != 3 {
			fmt.Fprintln(os.Stderr, "kfake: -sasl wants METHOD:USER:PASS")
			os.Exit(2)
		}
		opts = append(opts, kfake.EnableSASL(), kfake.Superuser(parts[0], parts[1], parts[2]))
	}
	if *tlsDir != "" {
		cert, err := tls.LoadX509KeyPair(filepath.Join(*tlsDir, "cert.pem"), filepath.Join(*tlsDir, "key.pem"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "kfake:", err)
			os.Exit(2)
		}
		opts = append(opts, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert}}))
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
