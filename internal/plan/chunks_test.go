package plan

import (
	"errors"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// widestKind is a test-only kind whose widest release has `keys` keys of
// `key_bytes` bytes, each with a value and a 95% interval, and `samples`
// values that are not per key: what checkRecordSize sees of a per-key
// release.
type widestKind struct{}

func init() { kind.Register(widestKind{}) }

func (widestKind) Name() string { return "plantest_keys" }
func (widestKind) Doc() string  { return "Test only: a release of a configured size." }
func (widestKind) Fields() []config.Field {
	return []config.Field{
		{Key: "keys", Type: "integer", Default: "0", Doc: "keys"},
		{Key: "key_bytes", Type: "integer", Default: "8", Doc: "bytes per key"},
		{Key: "samples", Type: "integer", Default: "0", Doc: "values not per key"},
	}
}

type widestConfig struct{ keys, keyBytes, samples int }

func (widestKind) Decode(p *config.Params, r *config.Release) {
	c := &widestConfig{keyBytes: 8}
	r.Params = c
	if v, _, ok := p.Int("keys"); ok {
		c.keys = v
	}
	if v, _, ok := p.Int("key_bytes"); ok {
		c.keyBytes = v
	}
	if v, _, ok := p.Int("samples"); ok {
		c.samples = v
	}
}

func (widestKind) Plan(st *config.Stream, r config.Release) (kind.Plan, error) {
	return &widestPlan{c: *r.Params.(*widestConfig), comp: noise.Component{Purpose: "count", Noise: noise.DiscreteLaplace,
		Sensitivity: 1, Scale: 1 / r.Epsilon, Quantum: 1, Granularity: 1, Epsilon: r.Epsilon}}, nil
}

type widestPlan struct {
	c    widestConfig
	comp noise.Component
}

func (p *widestPlan) Components() []noise.Component { return []noise.Component{p.comp} }
func (p *widestPlan) Charges() []kind.Charge        { return kind.ComponentCharges(p.Components()) }
func (p *widestPlan) Describe() string              { return "" }
func (p *widestPlan) Accuracy() string              { return "" }
func (p *widestPlan) Notes() []string               { return nil }
func (p *widestPlan) Fields() []kind.Field          { return nil }
func (p *widestPlan) Norms() kind.Norms             { return kind.Norms{} }
func (p *widestPlan) PDP() ([]kind.PDPComponent, error) {
	return nil, errors.New("none")
}
func (p *widestPlan) Statistic([]int) (kind.Statistic, error) { return nil, errors.New("none") }
func (p *widestPlan) Merge([]kind.Part) (kind.Merged, error)  { return nil, errors.New("none") }
func (p *widestPlan) Release(kind.Merged, noise.Sampler, *schema.Release) (kind.Fit, error) {
	return nil, errors.New("none")
}

// Widest fills the keys with one placeholder each, as a kind would: the
// same widest key, not sorted.
func (p *widestPlan) Widest(rel *schema.Release) {
	rel.Keys = make([]string, p.c.keys)
	for i := range rel.Keys {
		rel.Keys[i] = strings.Repeat("k", p.c.keyBytes)
	}
	rel.Values, rel.Intervals95 = kind.Wide(p.c.keys), kind.Wide(p.c.keys)
	rel.Samples = kind.Wide(p.c.samples)
}

// TestRecordSizeByKey: a release too large for one record only because of
// its keys and the values aligned with them is accepted (the release stage
// writes it in chunks); one whose other fields, or a single key, cannot fit
// in a record is refused as before, with the reason.
func TestRecordSizeByKey(t *testing.T) {
	for _, tc := range []struct {
		name, release string
		want          string // "" for accepted
	}{
		{"100000 keys", "{name: d, kind: plantest_keys, keys: 100000, epsilon: 0.5}", ""},
		{"200000 keys of 64 bytes", "{name: d, kind: plantest_keys, keys: 200000, key_bytes: 64, epsilon: 0.5}", ""},
		{"few keys, too many samples", "{name: d, kind: plantest_keys, keys: 10, samples: 200000, epsilon: 0.5}", "cannot be split by key"},
		{"many keys and too many samples", "{name: d, kind: plantest_keys, keys: 100000, samples: 200000, epsilon: 0.5}", "fields other than the divided arrays"},
		{"a key larger than a record", "{name: d, kind: plantest_keys, keys: 3, key_bytes: 1000000, epsilon: 0.5}", `key "kkkk`},
		{"no keys, too many samples", "{name: d, kind: plantest_keys, samples: 200000, epsilon: 0.5}", "lower samples"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(strings.Replace(twoReleases, "%s", "5", 1),
				"{name: h, kind: histogram, field: v, bounds: [0, 1], bins: 4, noise: gaussian, epsilon: 0.5, delta: 1e-8}", tc.release, 1)
			c, err := config.Parse([]byte(src), "p.yaml")
			if err != nil {
				t.Fatal(err)
			}
			_, err = Build(c)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), "releases[1]") || !strings.Contains(err.Error(), tc.want) || len(err.Error()) > 2000):
				t.Fatalf("err = %.3000v, want a short config error at releases[1] containing %q", err, tc.want)
			}
		})
	}
}
