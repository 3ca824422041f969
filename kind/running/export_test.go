package running

import (
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/schema"
)

// LegacyRun is s's current horizon as a checkpoint of ReleaserState v1
// held it (ReleaseBooks.Run), for the test of Decode's legacy path.
func LegacyRun(s kind.State) *schema.RunState {
	hz := s.(*state).cur
	if hz == nil {
		return nil
	}
	rs := &schema.RunState{Horizon: hz.index, Charged: hz.charged, Refused: hz.refused, Period: hz.period, Charges: hz.charges}
	for _, l := range hz.logs {
		rs.Logs = append(rs.Logs, schema.RunLog{First: int32(l.First), X: l.X, Z: l.Z, Factor: l.Factor})
	}
	return rs
}
