package schema

import (
	"reflect"
	"testing"
)

// TestPDPRoundTrip checks that the pDP records survive encoding unchanged
// and that truncated input is an error.
func TestPDPRoundTrip(t *testing.T) {
	u := PDPUnit{Stream: "s", Unit: "rider-7", GaussianRho: 0.25, PureRho: 0.5, PureEpsilon: 1, ApproxEpsilon: 0.1,
		ApproxDelta: 1e-7, Charges: 3, LastWindow: 1714554000000, Epsilon: 2.5, Delta: 1e-6, UpdatedAt: 1714554060000}
	b, err := EncodePDPUnit(u)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodePDPUnit(b)
	if err != nil || !reflect.DeepEqual(got, u) {
		t.Fatalf("unit round trip: %+v, %v", got, err)
	}
	if _, err := DecodePDPUnit(b[:len(b)-3]); err == nil {
		t.Error("truncated PDPUnit decoded")
	}
	s := PDPSummary{Stream: "s", WindowStart: 1000, WindowEnd: 2000, Delta: 1e-6,
		Releases: []PDPRelease{{Release: "n", Status: "ok", Units: 10, P50: 0.1, P90: 0.2, P99: 0.3, Max: 0.4, DPEpsilon: 1, LipschitzSigma: 0.25},
			{Release: "h", Status: "unavailable"}},
		CumulativeUnits: 12, CumulativeP50: 0.5, CumulativeP90: 0.6, CumulativeP99: 0.7, CumulativeMax: 0.8, PublishedAt: 3000}
	b, err = EncodePDPSummary(s)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := DecodePDPSummary(b)
	if err != nil || !reflect.DeepEqual(gs, s) {
		t.Fatalf("summary round trip: %+v, %v", gs, err)
	}
	if _, err := DecodePDPSummary(b[:len(b)/2]); err == nil {
		t.Error("truncated PDPSummary decoded")
	}
	if PDPUnitKey("s", "u") != "unit/s/u" || PDPSummaryKey("s", 5) != "summary/s/5" {
		t.Error("keys")
	}
}
