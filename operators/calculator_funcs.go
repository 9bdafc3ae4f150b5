package operators

import (
	"errors"
	"fmt"
	"math"
	"math/big"
)

// calcFunc is a calculator function; arity -1 means one or more arguments.
type calcFunc struct {
	arity int
	eval  func(args []num) (num, error)
}

var functions = map[string]calcFunc{
	"sqrt":      {1, fnSqrt},
	"log":       {1, logFunc("log", 1)},
	"ln":        {1, logFunc("ln", 1)},
	"log10":     {1, logFunc("log10", math.Ln10)},
	"log2":      {1, logFunc("log2", math.Ln2)},
	"exp":       {1, fnExp},
	"sin":       {1, trig("sin", math.Sin)},
	"cos":       {1, trig("cos", math.Cos)},
	"tan":       {1, trig("tan", math.Tan)},
	"asin":      {1, inverseTrig("asin", math.Asin)},
	"acos":      {1, inverseTrig("acos", math.Acos)},
	"atan":      {1, trig("atan", math.Atan)},
	"abs":       {1, fnAbs},
	"floor":     {1, rounding(big.ToNegativeInf)},
	"ceil":      {1, rounding(big.ToPositiveInf)},
	"round":     {1, rounding(big.ToNearestAway)},
	"min":       {-1, extreme(-1)},
	"max":       {-1, extreme(1)},
	"factorial": {1, func(a []num) (num, error) { return factorial(token{}, a[0]) }},
}

func fnSqrt(a []num) (num, error) {
	x := a[0]
	if x.sign() < 0 {
		return num{}, errors.New("square root of a negative number is not a real number")
	}
	if x.isInt() {
		r := new(big.Int).Sqrt(x.i)
		if new(big.Int).Mul(r, r).Cmp(x.i) == 0 {
			return intNum(r), nil
		}
	}
	return num{f: newFloat().Sqrt(x.float()), digits: x.prec()}, nil
}

func logFunc(name string, base float64) func([]num) (num, error) {
	return func(a []num) (num, error) {
		if a[0].sign() <= 0 {
			return num{}, fmt.Errorf("%s of zero or a negative number is undefined", name)
		}
		return float64Result(lnBig(a[0].float())/base, name)
	}
}

func fnExp(a []num) (num, error) {
	y, _ := a[0].float().Float64()
	v, err := expFloat(y)
	if err != nil {
		return num{}, fmt.Errorf("exp %w", err)
	}
	return v, nil
}

// float64Arg converts x for a package math function, refusing values
// where float64 would be meaningless.
func float64Arg(name string, x num) (float64, error) {
	f, _ := x.float().Float64()
	if math.IsInf(f, 0) || math.Abs(f) > 1e15 {
		return 0, fmt.Errorf("%s argument too large", name)
	}
	return f, nil
}

func trig(name string, fn func(float64) float64) func([]num) (num, error) {
	return func(a []num) (num, error) {
		x, err := float64Arg(name, a[0])
		if err != nil {
			return num{}, err
		}
		return float64Result(fn(x), name)
	}
}

func inverseTrig(name string, fn func(float64) float64) func([]num) (num, error) {
	return func(a []num) (num, error) {
		x, err := float64Arg(name, a[0])
		if err != nil {
			return num{}, err
		}
		if x < -1 || x > 1 {
			return num{}, fmt.Errorf("%s needs a value between -1 and 1", name)
		}
		return float64Result(fn(x), name)
	}
}

func fnAbs(a []num) (num, error) {
	if a[0].sign() < 0 {
		return a[0].neg(), nil
	}
	return a[0], nil
}

// rounding returns floor, ceil or round (half away from zero); the result
// is an exact integer.
func rounding(mode big.RoundingMode) func([]num) (num, error) {
	return func(a []num) (num, error) {
		x := a[0]
		if x.isInt() {
			return x, nil
		}
		if x.f.MantExp(nil) > calcMaxBits {
			return num{}, errors.New("result too large")
		}
		t, _ := x.f.Int(nil) // toward zero
		if x.f.IsInt() {
			return intNum(t), nil
		}
		frac := newFloat().Sub(x.f, newFloat().SetInt(t)) // same sign as x, |frac| < 1
		switch mode {
		case big.ToNegativeInf:
			if frac.Sign() < 0 {
				t.Sub(t, big.NewInt(1))
			}
		case big.ToPositiveInf:
			if frac.Sign() > 0 {
				t.Add(t, big.NewInt(1))
			}
		default:
			if newFloat().Abs(frac).Cmp(big.NewFloat(0.5)) >= 0 {
				t.Add(t, big.NewInt(int64(frac.Sign())))
			}
		}
		return intNum(t), nil
	}
}

func extreme(want int) func([]num) (num, error) {
	return func(a []num) (num, error) {
		best := a[0]
		for _, x := range a[1:] {
			var c int
			if best.isInt() && x.isInt() {
				c = x.i.Cmp(best.i)
			} else {
				c = x.float().Cmp(best.float())
			}
			if c == want {
				best = x
			}
		}
		return best, nil
	}
}
