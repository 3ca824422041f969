// Package all links every release kind into a program: import it for its
// side effect, as a program imports image/png, so that each kind's
// package registers itself with package kind.
package all

import (
	// Each kind registers itself in its init function.
	_ "github.com/dpstream/dpstream/kind/count"
	_ "github.com/dpstream/dpstream/kind/countunits"
	_ "github.com/dpstream/dpstream/kind/density"
	_ "github.com/dpstream/dpstream/kind/histogram"
	_ "github.com/dpstream/dpstream/kind/mean"
	_ "github.com/dpstream/dpstream/kind/prediction"
	_ "github.com/dpstream/dpstream/kind/quantiles"
	_ "github.com/dpstream/dpstream/kind/randomizedresponse"
	_ "github.com/dpstream/dpstream/kind/regression"
	_ "github.com/dpstream/dpstream/kind/selectkeys"
	_ "github.com/dpstream/dpstream/kind/sum"
	_ "github.com/dpstream/dpstream/kind/variance"
)
