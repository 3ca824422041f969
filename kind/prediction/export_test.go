package prediction

import (
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// SetClassify replaces the soft majority (for the audit's broken variant)
// and returns the function that restores it.
func SetClassify(f func([]int, float64, noise.Sampler) (int, error)) (restore func()) {
	old := classify
	classify = f
	return func() { classify = old }
}

// Predictions are each model's prediction of a row (a value, or a class
// index), for the accuracy test's non-private baselines.
func (m *Model) Predictions(row []float64) []float64 {
	xs := make([]float64, m.p.d)
	out := make([]float64, len(m.theta))
	m.scale(row, xs)
	m.predict(xs, out)
	return out
}

// SingleModel is the model fit on every shard's statistics together (one
// model on all the data), for the accuracy test's baseline.
func SingleModel(p *Plan, state []int64) (*Model, error) {
	one := append([]int64(nil), state[:stateHeader]...)
	one[1] = 1
	rec := make([]int64, 1+p.sums)
	rest := state[stateHeader:]
	for i := range p.cfg.Shards {
		for k, v := range rest[i*(1+p.sums) : (i+1)*(1+p.sums)] {
			rec[k] += v
		}
	}
	return p.model(append(one, rec...), 1)
}

// LegacyModel is s's current models as a checkpoint of ReleaserState v1
// held them (ReleaseBooks.Model), for the test of Decode's legacy path.
func LegacyModel(s kind.State) *schema.ModelState {
	st := s.(*state)
	if st.cur == nil {
		return nil
	}
	return &schema.ModelState{Window: st.cur.window, Period: st.cur.period, State: st.cur.state, Answered: int64(st.answered[st.cur.window])}
}
