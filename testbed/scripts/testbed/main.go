// Command testbed runs the lossaudit testbed by hand: a 3-node Apache Kafka
// cluster on loopback, the pipeline's topics, the Kafka Streams application
// of the user story and the load generator, then reads commands from stdin to
// inject outages (see docs/testbed.md).
//
// Usage: go run ./testbed/scripts/testbed [-dir D] [-records N] [-rate R] [-drop-before-store a:k1;b:k2] [-drop-before-output k3]
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lossaudit/lossaudit/testbed/e2e"
	"github.com/lossaudit/lossaudit/testbed/kafka"
	"github.com/lossaudit/lossaudit/testbed/loadgen"
	"github.com/lossaudit/lossaudit/testbed/streamsapp"
)

const help = `commands:
  load N            produce N more records to each input (in the background)
  kill I | stop I | start I    kill -9 / stop cleanly / start broker I (1-3)
  killall | startall           kill -9 every broker / start the stopped ones
  app-kill | app-stop | app-start   the Kafka Streams application
  lag               the application's lag per input and repartition partition
  status            brokers and application running?
  quit              kill everything and exit (data stays in -dir)
`

func main() {
	dir := flag.String("dir", "./lossaudit-testbed", "working directory (broker data, app state, logs, audit.yaml)")
	records := flag.Int("records", 1000, "records per input produced at start")
	rate := flag.Int("rate", 100, "records per second per input")
	dbs := flag.String("drop-before-store", "", `inject loss before the store: "a:cust-001,cust-002;b:cust-003"`)
	dbo := flag.String("drop-before-output", "", `inject loss before OUTPUT: "cust-004,cust-005"`)
	flag.Parse()
	if err := run(*dir, *records, *rate, *dbs, *dbo); err != nil {
		fmt.Fprintln(os.Stderr, "testbed:", err)
		os.Exit(1)
	}
}

func parseDrops(s string) map[string][]string {
	out := map[string][]string{}
	for _, part := range strings.Split(s, ";") {
		in, keys, ok := strings.Cut(part, ":")
		if !ok {
			continue
		}
		for _, k := range strings.Split(keys, ",") {
			if k = strings.TrimSpace(k); k != "" {
				out[strings.TrimSpace(in)] = append(out[strings.TrimSpace(in)], k)
			}
		}
	}
	return out
}

func run(dir string, records, rate int, dbs, dbo string) error {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	c, err := kafka.Start(ctx, kafka.Options{Dir: filepath.Join(dir, "kafka")})
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.WaitReady(ctx); err != nil {
		return err
	}
	fmt.Printf("kafka %s up: %s\n", c.Version(), strings.Join(c.Bootstrap(), ","))
	adm, err := kafka.NewAdmin(c.Bootstrap())
	if err != nil {
		return err
	}
	defer adm.Close()
	specs := []kafka.TopicSpec{{Name: e2e.Output, Partitions: 3},
		{Name: e2e.SchemasTopic, Partitions: 1, Configs: map[string]string{"cleanup.policy": "compact"}}}
	for _, in := range e2e.Inputs {
		specs = append(specs, kafka.TopicSpec{Name: in, Partitions: 3})
	}
	if err := adm.CreateTopics(ctx, specs...); err != nil {
		return err
	}
	var dbo2 []string
	for _, k := range strings.Split(dbo, ",") {
		if k = strings.TrimSpace(k); k != "" {
			dbo2 = append(dbo2, k)
		}
	}
	app, err := streamsapp.New(ctx, streamsapp.Options{Bootstrap: c.Bootstrap(), ApplicationID: e2e.ApplicationID,
		Inputs: e2e.Inputs, Output: e2e.Output, SchemasTopic: e2e.SchemasTopic, Dir: filepath.Join(dir, "app"),
		DropBeforeStore: parseDrops(dbs), DropBeforeOutput: dbo2, SessionTimeout: 10 * time.Second})
	if err != nil {
		return err
	}
	defer app.Kill()
	if err := app.Start(); err != nil {
		return err
	}
	if err := app.WaitRunning(ctx); err != nil {
		return err
	}
	cfgFile := filepath.Join(dir, "audit.yaml")
	if err := os.WriteFile(cfgFile, []byte(e2e.AuditYAML(c.Bootstrap(), app.TopologyFile(), filepath.Join(dir, "lossaudit-data"))), 0o644); err != nil {
		return err
	}
	fmt.Printf("streams app running (log %s, topology %s, ground truth %s)\naudit config: %s\n",
		app.LogFile(), app.TopologyFile(), app.GroundTruthFile(), cfgFile)

	seed := uint64(1)
	load := func(n int) {
		seed++
		gen, err := loadgen.New(ctx, loadgen.Config{Brokers: c.Bootstrap(), Topics: e2e.Inputs, Records: n, Rate: rate, Seed: seed})
		if err != nil {
			fmt.Println("load:", err)
			return
		}
		go func() {
			err := gen.Run(ctx)
			path := filepath.Join(dir, fmt.Sprintf("ledger-%d.jsonl", seed))
			if werr := gen.Ledger().WriteFile(path); werr != nil && err == nil {
				err = werr
			}
			fmt.Printf("load of %d records per input done (ledger %s), error: %v\n", n, path, err)
		}()
	}
	load(records)
	fmt.Print(help)

	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for {
		var line string
		select {
		case <-ctx.Done():
			return nil
		case l, ok := <-lines:
			if !ok {
				return nil
			}
			line = l
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		arg := 0
		if len(f) > 1 {
			arg, _ = strconv.Atoi(f[1])
		}
		var err error
		switch f[0] {
		case "load":
			load(max(arg, 1))
		case "kill":
			err = c.KillNode(arg)
		case "stop":
			err = c.StopNode(arg)
		case "start":
			err = c.StartNode(arg)
		case "killall":
			err = c.KillAll()
		case "startall":
			if err = c.StartAll(); err == nil {
				err = c.WaitReady(ctx)
			}
		case "app-kill":
			err = app.Kill()
		case "app-stop":
			err = app.Stop()
		case "app-start":
			if err = app.Start(); err == nil {
				err = app.WaitRunning(ctx)
			}
		case "lag":
			var stages map[string]e2e.Stage
			if stages, err = e2e.ParseStages(app.TopologyFile()); err == nil {
				err = printLag(ctx, c, stages)
			}
		case "status":
			for _, n := range c.Nodes {
				fmt.Printf("broker %d (127.0.0.1:%d) running=%v\n", n.ID, n.BrokerPort, c.Running(n.ID))
			}
			fmt.Printf("app running=%v\n", app.Running())
		case "quit", "exit":
			return nil
		default:
			fmt.Print(help)
		}
		if err != nil {
			fmt.Println("error:", err)
		} else {
			fmt.Println("ok")
		}
	}
}

func printLag(ctx context.Context, c *kafka.Cluster, stages map[string]e2e.Stage) error {
	adm, err := kafka.NewAdmin(c.Bootstrap())
	if err != nil {
		return err
	}
	defer adm.Close()
	lag, err := e2e.Lag(ctx, adm, stages)
	if err != nil {
		return err
	}
	total := int64(0)
	for tp, l := range lag {
		total += l
		if l != 0 {
			fmt.Printf("%s[%d] lag %d\n", tp.Topic, tp.Partition, l)
		}
	}
	fmt.Printf("total lag %d\n", total)
	return nil
}
