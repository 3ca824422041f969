package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/mechanism/density"
)

func cmdExplain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("explain", "-c pipeline.yaml", `
Print, for every release of every stream, what the configuration implies:
the sensitivity derived from the enforced bounds (add/remove one privacy
unit, at most max_events_per_window events each), the noise distribution
and scale, the expected absolute error of a released value, the privacy
cost of one window and how many windows the stream's budget lasts. Nothing
connects to Kafka.`, stdout, stderr)
	cfgPath := fs.String("c", "pipeline.yaml", "pipeline config file")
	fs.StringVar(cfgPath, "config", "pipeline.yaml", "same as -c")
	if code, done := parseFlags(fs, args, stdout); done {
		return code
	}
	_, ps, ok := load(*cfgPath, stderr)
	if !ok {
		return exitConfig
	}
	explain(stdout, ps)
	return exitOK
}

func explain(w io.Writer, ps []plan.Stream) {
	for i, s := range ps {
		if i > 0 {
			fmt.Fprintln(w)
		}
		c := s.Config
		per := "over the stream's lifetime"
		if s.Per > 0 {
			per = "per " + s.Per.String()
		}
		fmt.Fprintf(w, "stream %s  (topic %s, unit %s, window %s, ≤ %d events per unit per window)\n",
			c.Name, c.Topic, c.PrivacyUnit, c.Window.Size, c.Contribution.MaxEventsPerWindow)
		fmt.Fprintf(w, "  budget ε=%g at δ=%g %s\n\n", s.Budget.Epsilon, s.Budget.Delta, per)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  release\tkind\tsensitivity\tnoise\tE|error|\tε per window\twindows alone")
		for _, r := range s.Releases {
			var sens, noise []string
			for _, n := range r.Noise {
				switch n.Mechanism {
				case "approx_dp":
					// A mechanism proved (ε, δ)-DP as a whole: no
					// sensitivity or scale to show.
					sens = append(sens, fmt.Sprintf("%s (ε=%.4g, δ=%.3g as a whole)", n.Purpose, n.Epsilon, n.Delta))
					noise = append(noise, "posterior sample")
					continue
				case "exponential":
					sens = append(sens, fmt.Sprintf("%s (ε=%.4g)", n.Purpose, n.Epsilon))
					noise = append(noise, "exponential mechanism")
					continue
				case "zcdp":
					sens = append(sens, fmt.Sprintf("%s (ρ=%.4g zCDP, any selected model)", n.Purpose, n.Epsilon))
					noise = append(noise, "AdaSSP on the selected features")
					continue
				}
				norm, dist := "Δ1", fmt.Sprintf("Laplace(b=%.4g)", n.Scale)
				switch n.Mechanism {
				case "discrete_laplace":
					dist = fmt.Sprintf("discrete Laplace(t=%.4g)", n.Scale)
				case "gaussian":
					norm, dist = "Δ2", fmt.Sprintf("Gaussian(σ=%.4g)", n.Scale)
				case "discrete_gaussian":
					norm, dist = "Δ2", fmt.Sprintf("discrete Gaussian(σ=%.4g)", n.Scale)
				}
				sens = append(sens, fmt.Sprintf("%s %s=%.4g", n.Purpose, norm, n.Sensitivity))
				noise = append(noise, dist)
			}
			alone := plan.WindowsUntilExhausted(r.Mechanisms, s.Budget)
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%.4g\t%s\n", r.Config.Name, kindDesc(r), strings.Join(sens, "; "),
				strings.Join(noise, "; "), errDesc(r), r.Cost, windowsDesc(alone))
		}
		tw.Flush()
		fmt.Fprintf(w, "\n  all releases: ε=%.4g per window (RDP composition at δ=%g); the budget lasts %s %s.\n",
			s.PerWindow, s.Budget.Delta, windowsDesc(s.Windows), per)
		switch perPeriod := int(s.Per / c.Window.Size); {
		case s.Windows == 0:
		case s.Per > 0 && s.Windows >= perPeriod:
			fmt.Fprintf(w, "  a %s period holds %d windows of %s, so every window is released; the budget renews each period.\n", s.Per, perPeriod, c.Window.Size)
		case s.Per > 0:
			fmt.Fprintf(w, "  a %s period holds %d windows of %s: after the first %d of a period, releases are published as budget_exhausted until the next period.\n", s.Per, perPeriod, c.Window.Size, s.Windows)
		default:
			fmt.Fprintf(w, "  with %s windows that is %s of data; after that releases are published as budget_exhausted.\n",
				c.Window.Size, durationDesc(float64(s.Windows)*c.Window.Size.Seconds()))
		}
		pureNote(w, s)
		regressionNotes(w, s)
	}
}

func kindDesc(r plan.Release) string {
	switch r.Config.Kind {
	case "histogram":
		axes := r.Cal.Spec.HistogramAxes()
		if len(axes) == 0 {
			break
		}
		fields := r.Config.Fields
		if len(fields) != len(axes) {
			fields = []string{r.Config.Field}
		}
		var parts []string
		for i, a := range axes {
			name := ""
			if i < len(fields) && len(axes) > 1 {
				name = fields[i] + " "
			}
			parts = append(parts, fmt.Sprintf("%s%d bins on [%g, %g]", name, a.Bins, a.Lo, a.Hi))
		}
		auto, capped := "", ""
		if r.Config.BinsAuto {
			auto = " (auto)"
		}
		if r.Config.MaxPerBin > 0 {
			capped = fmt.Sprintf(", ≤ %d per unit per cell", r.Config.MaxPerBin)
		}
		return "histogram " + strings.Join(parts, " × ") + auto + capped
	case "regression":
		icpt := ""
		if r.Config.Intercept {
			icpt = " + intercept"
		}
		return fmt.Sprintf("regression (%s) of %s on %s%s", r.Config.Method, r.Config.Target, strings.Join(r.Config.Features, ", "), icpt)
	case "randomized_response":
		if r.RR == nil {
			break
		}
		return fmt.Sprintf("randomized_response of %s, %d categories, local ε=%.3g (p=%.3g)", r.Config.Field,
			r.RR.Spec.Categories, r.RR.Spec.LocalEpsilon(), r.RR.Spec.P)
	case "count":
		return "count"
	case "density":
		if r.Density == nil {
			break
		}
		auto := ""
		if r.Config.TermsAuto {
			auto = " (auto)"
		}
		return fmt.Sprintf("density of %s on [%g, %g], %d terms%s", r.Config.Field,
			r.Config.Bounds[0], r.Config.Bounds[1], r.Density.Spec.Terms, auto)
	}
	return fmt.Sprintf("%s of %s in [%g, %g]", r.Config.Kind, r.Config.Field, r.Config.Bounds[0], r.Config.Bounds[1])
}

func errDesc(r plan.Release) string {
	if r.Density != nil {
		// Each coefficient is a noisy basis sum divided by the noisy
		// count, so its noise is about E|noise of one sum|/n for n events
		// (first order in 1/n).
		for _, c := range r.Density.Components {
			if c.Purpose == density.PurposeBasisSums {
				return fmt.Sprintf("≈ %.3g/n per coefficient", c.ExpectedAbsError)
			}
		}
		return "—"
	}
	if r.Regression != nil {
		return "see std_errors"
	}
	if r.RR != nil && len(r.RR.Components) > 0 {
		return fmt.Sprintf("%.3g per noisy count", r.RR.Components[0].ExpectedAbsError)
	}
	e := r.Cal.ExpectedAbsError
	switch r.Config.Kind {
	case "histogram":
		return fmt.Sprintf("%.3g per bin", e)
	case "mean":
		// The centered sum's noise divided by the count dominates: E|error|
		// is about its E|noise|/n for n events (first order in 1/n).
		for _, c := range r.Cal.Components {
			if c.Purpose == "centered_sum" {
				return fmt.Sprintf("≈ %.3g/n", c.ExpectedAbsError)
			}
		}
		return "—"
	}
	return fmt.Sprintf("%.3g", e)
}

func windowsDesc(n int) string {
	if n >= 1_000_000 {
		return "≥ 1,000,000 windows"
	}
	if n == 1 {
		return "1 window"
	}
	return fmt.Sprintf("%d windows", n)
}

func durationDesc(sec float64) string {
	switch {
	case sec >= 2*86400:
		return fmt.Sprintf("%.1f days", sec/86400)
	case sec >= 2*3600:
		return fmt.Sprintf("%.1f hours", sec/3600)
	case sec >= 120:
		return fmt.Sprintf("%.1f minutes", sec/60)
	}
	return fmt.Sprintf("%.0f seconds", sec)
}

// pureNote explains when plain composition of pure ε beats RDP.
func pureNote(w io.Writer, s plan.Stream) {
	pure := 0.0
	for _, r := range s.Releases {
		for _, m := range r.Mechanisms {
			e, ok := m.PureEpsilon()
			if !ok {
				return
			}
			pure += e
		}
	}
	if pure <= 0 {
		return
	}
	n := int(math.Floor(s.Budget.Epsilon/pure + 1e-9))
	fmt.Fprintf(w, "  every release is pure ε-DP: basic composition alone would allow %d windows (ε=%.4g each); the accountant uses whichever bound is smaller.\n", n, pure)
}

// regressionNotes warns about regression settings whose effect the table
// cannot show: model selection's sensitivity to radius and penalty (Lei et
// al. 2018 found utility depends strongly on both), the δ an (ε, δ)
// posterior sample uses up, and when OPS's per-instance loss can be exact.
func regressionNotes(w io.Writer, s plan.Stream) {
	l := s.Config.Contribution.MaxEventsPerWindow
	for _, r := range s.Releases {
		c := r.Config
		switch {
		case r.PCLS != nil:
			fmt.Fprintf(w, "  note: %s selects a model privately (pcls, radius %g, penalty %g): its utility is sensitive to both; try several values on sample data with 'dpstream simulate' before deploying.\n",
				c.Name, c.Radius, c.Penalty)
		case r.Regression != nil && (c.Method == "ops" || c.Method == "adaops"):
			var approx float64
			for _, m := range r.Mechanisms {
				approx += m.Delta
			}
			fmt.Fprintf(w, "  note: %s's posterior sample is (ε, δ)-DP as a whole and uses δ=%.3g of the stream's δ=%g per window (basic composition), which caps the windows whatever ε is.\n",
				c.Name, approx, s.Budget.Delta)
			if l != 1 {
				fmt.Fprintf(w, "  note: %s's per-instance DP certificate is exact only with max_events_per_window: 1 (one row per unit); with %d rows per unit it reports the worst case for the posterior sample.\n", c.Name, l)
			}
		}
	}
}
