package main

import (
	"bufio"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/chart"
	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/kind/regression"
	"github.com/dpstream/dpstream/schema"
)

func ptr(v float64) *float64 { return &v }

// regRelease is a regression release as the release stage publishes it.
func regRelease(fields []string, coef, se []float64, icpt, ridge *float64, method string) schema.Release {
	return schema.Release{ReleaseID: "cars/fit/0", Stream: "cars", Release: "fit", Kind: "regression", Status: "ok",
		WindowEnd: 3_600_000, Fields: fields, Coefficients: coef, StdErrors: se, Intercept: icpt, Ridge: ridge, Method: method}
}

// TestTailRegression writes regression releases (one ok, one refused) to
// an embedded broker and reads them back with the CLI: 'tail releases'
// prints each as the JSON line of its schema.Release, with the
// coefficients, standard errors, intercept, method, ridge and feature
// names it was written with (Avro and JSON round trips are exact for
// float64), and 'tail releases --plot' draws the ok one as a table.
func TestTailRegression(t *testing.T) {
	broker, err := kafkaio.StartEmbedded("127.0.0.1:0", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	brokers := []string{broker.Addr()}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	const topic = "reg.releases"
	if err := kafkaio.Plaintext(brokers).EnsureTopics(ctx, []kafkaio.TopicSpec{{Name: topic, Partitions: 1}}); err != nil {
		t.Fatal(err)
	}
	ok := regRelease([]string{"hp", "weight"}, []float64{-0.04712345678901234, -0.0058}, []float64{0.012, 0.0009}, ptr(45.64), ptr(0.25), "adassp")
	ok.Noise = []schema.NoiseComponent{{Purpose: "lambda_min", Mechanism: "discrete_gaussian", Sensitivity: 3, Scale: 23.5, Epsilon: 1, Delta: 1e-16}}
	refused := schema.Release{ReleaseID: "cars/fit/3600000", Stream: "cars", Release: "fit", Kind: "regression", Status: "budget_exhausted",
		WindowStart: 3_600_000, WindowEnd: 7_200_000}
	wr := kafkaio.Plaintext(brokers).NewWriter(topic)
	wr.Async = false
	for _, r := range []schema.Release{ok, refused} {
		b, err := schema.EncodeRelease(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := wr.WriteMessages(ctx, kafka.Message{Key: []byte(r.Stream), Value: b}); err != nil {
			t.Fatal(err)
		}
	}
	if err := wr.Close(); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := cliTimeout(t, 20*time.Second, "tail", "releases", "--brokers", broker.Addr(), "--topic", topic)
	if code != exitOK || stderr != "" {
		t.Fatalf("tail releases: exit %d; stderr:\n%s", code, stderr)
	}
	var got []schema.Release
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		var r schema.Release
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("line is not a schema.Release: %v: %s", err, sc.Text())
		}
		var raw map[string]any
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			t.Fatal(err)
		}
		if r.Status == "ok" {
			for _, key := range []string{"coefficients", "std_errors", "intercept", "ridge", "method", "fields"} {
				if _, has := raw[key]; !has {
					t.Errorf("JSON line lacks %q: %s", key, sc.Text())
				}
			}
		} else {
			for _, key := range []string{"coefficients", "intercept", "ridge", "method"} {
				if _, has := raw[key]; has {
					t.Errorf("refused release carries %q: %s", key, sc.Text())
				}
			}
		}
		got = append(got, r)
	}
	if len(got) != 2 {
		t.Fatalf("%d releases, want 2:\n%s", len(got), stdout)
	}
	g := got[0]
	if !slices.Equal(g.Coefficients, ok.Coefficients) || !slices.Equal(g.StdErrors, ok.StdErrors) || !slices.Equal(g.Fields, ok.Fields) ||
		g.Intercept == nil || *g.Intercept != *ok.Intercept || g.Ridge == nil || *g.Ridge != *ok.Ridge || g.Method != ok.Method ||
		g.Kind != "regression" || !slices.Equal(g.Noise, ok.Noise) {
		t.Errorf("tail printed %+v, want %+v", g, ok)
	}
	if got[1].Status != "budget_exhausted" || got[1].Coefficients != nil || got[1].Intercept != nil {
		t.Errorf("refused release printed as %+v", got[1])
	}

	code, stdout, stderr = cliTimeout(t, 20*time.Second, "tail", "releases", "--plot", "--width", "60", "--brokers", broker.Addr(), "--topic", topic)
	if code != exitOK {
		t.Fatalf("tail releases --plot: exit %d; stderr:\n%s", code, stderr)
	}
	if table := strings.Join(regression.Kind{}.Render(ok, chart.Options{Width: 60}), "\n"); !strings.Contains(stdout, table) {
		t.Errorf("--plot output lacks the regression's table:\n%s\nin\n%s", table, stdout)
	}
	for _, want := range []string{"cars/fit (regression)", "method adassp\nridge λ = 0.25 (on the scaled problem)", "refused: the stream's budget is exhausted"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--plot output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "{") {
		t.Errorf("JSON printed with --plot:\n%s", stdout)
	}
}
