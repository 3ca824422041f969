package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/schema"
	"github.com/dpstream/dpstream/stages/accumulate"
)

func cmdProduce(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("produce", "[-c pipeline.yaml] [--stream NAME] [--file events.jsonl|-] [flags]", `
Read events as JSON lines (one object per line) or CSV with a header row,
from a file or stdin, and publish them to a stream's input topic in the
stream's format (avro, confluent-avro or json), keyed by the privacy unit
with the murmur2 partitioner, so each person's events land on one
partition. Lines that do not fit the stream's schema are reported with
their line number and skipped; the exit code is 1 if any was.`, stdout, stderr)
	var c connFlags
	c.register(fs, false)
	stream := fs.String("stream", "", "stream to publish to (default: the config's only stream)")
	file := fs.String("file", "-", "input file; - reads stdin")
	format := fs.String("input-format", "auto", "input format: jsonl, csv, or auto (csv for *.csv files)")
	batch := fs.Int("batch", 500, "records per produce request")
	if code, done := parseFlags(fs, args, stdout); done {
		return code
	}
	if *batch < 1 {
		fmt.Fprintf(stderr, "dpstream produce: --batch %d: want at least 1 record per request\n", *batch)
		return exitConfig
	}
	cfg, err := config.Load(c.config)
	if err != nil {
		printConfigError(stderr, err)
		return exitConfig
	}
	st, err := pickStream(cfg, *stream)
	if err != nil {
		fmt.Fprintln(stderr, "dpstream produce:", err)
		return exitConfig
	}
	schemaText, err := st.AvroSchema()
	if err != nil {
		fmt.Fprintln(stderr, "dpstream produce:", err)
		return exitConfig
	}
	enc, err := schema.NewEncoder(st.Format, schemaText, st.SchemaID)
	if err != nil {
		fmt.Fprintln(stderr, "dpstream produce:", err)
		return exitConfig
	}
	in, closeIn, err := openInput(*file, "file", stderr)
	if err != nil {
		fmt.Fprintln(stderr, "dpstream produce:", err)
		return exitConfig
	}
	defer closeIn()
	isCSV := *format == "csv" || (*format == "auto" && strings.HasSuffix(strings.ToLower(*file), ".csv"))
	if !isCSV && *format != "jsonl" && *format != "auto" {
		fmt.Fprintf(stderr, "dpstream produce: --input-format %q: want jsonl, csv or auto\n", *format)
		return exitConfig
	}
	conn, closeConn, code := clientConn(ctx, "produce", cfg, c, "", stderr)
	if code != exitOK {
		return code
	}
	defer closeConn()
	if err := conn.EnsureTopics(ctx, []kafkaio.TopicSpec{{Name: st.Topic, Partitions: st.Partitions}}); err != nil {
		fmt.Fprintln(stderr, "dpstream produce:", err)
		return exitError
	}
	w := conn.NewWriter(st.Topic)
	defer w.Close()

	unit := st.PrivacyUnit
	if unit == config.PrivacyUnitEvent {
		unit = "" // every event is its own unit: no key needed
	}
	p := &producer{w: w, enc: enc, unit: unit, stderr: stderr, batchSize: *batch, start: time.Now(), lastProgress: time.Now()}
	readErr := readEvents(in, isCSV, func(line int, _ string, ev map[string]any, perr error) error {
		if perr != nil {
			p.reject(line, perr)
			return nil
		}
		return p.add(ctx, line, ev)
	})
	if err := p.flush(ctx); err != nil {
		fmt.Fprintln(stderr, "dpstream produce:", err)
		return exitError
	}
	if readErr != nil {
		fmt.Fprintln(stderr, "dpstream produce:", readErr)
		return exitError
	}
	fmt.Fprintf(stderr, "produced %d records to %s in %s; %d lines rejected\n", p.sent, st.Topic, time.Since(p.start).Round(time.Millisecond), p.bad)
	if p.bad > 0 {
		return exitError
	}
	return exitOK
}

func pickStream(cfg *config.Config, name string) (*config.Stream, error) {
	if name == "" {
		if len(cfg.Streams) == 1 {
			return &cfg.Streams[0], nil
		}
		var names []string
		for _, s := range cfg.Streams {
			names = append(names, s.Name)
		}
		return nil, fmt.Errorf("the config has %d streams; choose one with --stream (%s)", len(cfg.Streams), strings.Join(names, ", "))
	}
	s, ok := cfg.Stream(name)
	if !ok {
		return nil, fmt.Errorf("no stream %q in the config", name)
	}
	return s, nil
}

type producer struct {
	w            *kafka.Writer
	enc          schema.Encoder
	unit         string
	stderr       io.Writer
	batchSize    int
	pending      []kafka.Message
	sent, bad    int
	start        time.Time
	lastProgress time.Time
}

func (p *producer) add(ctx context.Context, line int, ev map[string]any) error {
	var keyBytes []byte
	if p.unit != "" {
		key, ok := ev[p.unit]
		if !ok || key == nil || fmt.Sprint(key) == "" {
			p.reject(line, fmt.Errorf("no privacy unit field %q", p.unit))
			return nil
		}
		keyBytes = []byte(unitKey(key))
	}
	b, err := p.enc.Encode(ev)
	if err != nil {
		p.reject(line, err)
		return nil
	}
	p.pending = append(p.pending, kafka.Message{Key: keyBytes, Value: b})
	if len(p.pending) >= p.batchSize {
		return p.flush(ctx)
	}
	return nil
}

// unitKey renders a unit the way the accumulate stage does, so the record
// key and the unit hash to the same partition.
func unitKey(v any) string {
	if n, ok := v.(json.Number); ok {
		if i, err := n.Int64(); err == nil {
			v = i
		} else if f, err := n.Float64(); err == nil {
			v = f
		}
	}
	if s, ok := accumulate.UnitString(v); ok {
		return s
	}
	return fmt.Sprint(v)
}

func (p *producer) reject(line int, err error) {
	p.bad++
	if p.bad <= 20 {
		fmt.Fprintf(p.stderr, "line %d: %v\n", line, err)
	} else if p.bad == 21 {
		fmt.Fprintln(p.stderr, "(further rejected lines are counted but not shown)")
	}
}

func (p *producer) flush(ctx context.Context) error {
	if len(p.pending) == 0 {
		return nil
	}
	if err := p.w.WriteMessages(ctx, p.pending...); err != nil {
		return fmt.Errorf("write to Kafka: %w", err)
	}
	p.sent += len(p.pending)
	p.pending = p.pending[:0]
	if time.Since(p.lastProgress) >= 2*time.Second {
		p.lastProgress = time.Now()
		rate := float64(p.sent) / time.Since(p.start).Seconds()
		fmt.Fprintf(p.stderr, "produced %d records (%.0f/s), %d rejected\n", p.sent, rate, p.bad)
	}
	return nil
}
