// Command install downloads the Apache Kafka broker jars and builds the Kafka
// Streams test application into the testbed cache (see ../install.sh).
//
// Usage: go run ./testbed/scripts/install [-kafka 3.9.2,4.1.2,4.4.0] [-streams 3.6.2,4.1.2,4.4.0]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/lossaudit/lossaudit/testbed/e2e"
	"github.com/lossaudit/lossaudit/testbed/kafka"
	"github.com/lossaudit/lossaudit/testbed/streamsapp"
)

func main() {
	// The e2e suite runs the selected versions plus the 4.x releases
	// (TestKafka4).
	k4 := strings.Join(e2e.Kafka4, ",")
	kv := flag.String("kafka", kafka.Version()+","+k4, "comma-separated Apache Kafka broker versions to install")
	sv := flag.String("streams", streamsapp.Version()+","+k4, "comma-separated Kafka Streams versions to build the application for")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	for _, v := range strings.Split(*kv, ",") {
		start := time.Now()
		libs, err := kafka.Install(ctx, strings.TrimSpace(v))
		if err != nil {
			fmt.Fprintln(os.Stderr, "install:", err)
			os.Exit(1)
		}
		fmt.Printf("kafka %s: %s (%v)\n", v, libs, time.Since(start).Round(time.Millisecond))
	}
	for _, v := range strings.Split(*sv, ",") {
		start := time.Now()
		cp, err := streamsapp.Build(ctx, strings.TrimSpace(v))
		if err != nil {
			fmt.Fprintln(os.Stderr, "install:", err)
			os.Exit(1)
		}
		fmt.Printf("streams app on kafka-streams %s: %s (%v)\n", v, cp, time.Since(start).Round(time.Millisecond))
	}
}
