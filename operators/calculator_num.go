package operators

import (
	"errors"
	"fmt"
	"math"
	"math/big"
)

// num is a calculator value: an exact integer (i != nil) or a float with
// the number of significant digits it can be trusted to.
type num struct {
	i      *big.Int
	f      *big.Float
	digits int
}

func intNum(i *big.Int) num { return num{i: i} }

func (n num) isInt() bool { return n.i != nil }

func (n num) float() *big.Float {
	if n.i != nil {
		return new(big.Float).SetPrec(calcPrec).SetInt(n.i)
	}
	return n.f
}

func (n num) prec() int {
	if n.i != nil {
		return calcDigits
	}
	return n.digits
}

func (n num) sign() int {
	if n.i != nil {
		return n.i.Sign()
	}
	return n.f.Sign()
}

func (n num) neg() num {
	if n.i != nil {
		return intNum(new(big.Int).Neg(n.i))
	}
	return num{f: new(big.Float).SetPrec(calcPrec).Neg(n.f), digits: n.digits}
}

// asInt returns n as an integer if it is integral and not too large.
func (n num) asInt() (*big.Int, bool) {
	if n.i != nil {
		return n.i, true
	}
	if !n.f.IsInt() || n.f.MantExp(nil) > calcMaxBits {
		return nil, false
	}
	i, _ := n.f.Int(nil)
	return i, true
}

func (n num) String() string {
	if n.i != nil {
		return n.i.String()
	}
	return formatFloat(n.f, n.digits)
}

// formatFloat formats f with digits significant digits. big.Float.Text
// converts the whole binary value to decimal, which is quadratic in the
// exponent, so values far from 1 are scaled by a power of ten first.
func formatFloat(f *big.Float, digits int) string {
	if f.Sign() == 0 {
		return "0"
	}
	if e := f.MantExp(nil); e > -256 && e < 256 {
		return f.Text('g', digits)
	}
	m := new(big.Float).SetPrec(calcPrec + 64).Abs(f)
	d := int(math.Floor(lnBig(m) / math.Ln10))
	p := pow10(abs(d))
	if d >= 0 {
		m.Quo(m, p)
	} else {
		m.Mul(m, p)
	}
	ten := big.NewFloat(10)
	for m.Cmp(ten) >= 0 {
		m.Quo(m, ten)
		d++
	}
	for m.Cmp(big.NewFloat(1)) < 0 {
		m.Mul(m, ten)
		d--
	}
	s := m.Text('g', digits)
	if s == "10" { // 9.999… rounded up
		s, d = "1", d+1
	}
	sign := ""
	if f.Sign() < 0 {
		sign = "-"
	}
	if d < 0 {
		return fmt.Sprintf("%s%se-%d", sign, s, -d)
	}
	return fmt.Sprintf("%s%se+%d", sign, s, d)
}

// pow10 is 10^n as a float.
func pow10(n int) *big.Float {
	z := new(big.Float).SetPrec(calcPrec + 64).SetInt64(1)
	base := new(big.Float).SetPrec(calcPrec + 64).SetInt64(10)
	for ; n > 0; n >>= 1 {
		if n&1 == 1 {
			z.Mul(z, base)
		}
		base.Mul(base, base)
	}
	return z
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func checkInt(i *big.Int, at token) (num, error) {
	if i.BitLen() > calcMaxBits {
		return num{}, &CalcError{Pos: at.pos, Msg: fmt.Sprintf("result too large (over %d bits)", calcMaxBits)}
	}
	return intNum(i), nil
}

// checkFloat rejects overflow and flushes underflow to zero.
func checkFloat(n num, at token) (num, error) {
	if n.f.IsInf() {
		return num{}, &CalcError{Pos: at.pos, Msg: "result too large"}
	}
	if n.f.Sign() != 0 {
		e := n.f.MantExp(nil)
		if e > calcMaxBinExp {
			return num{}, &CalcError{Pos: at.pos, Msg: "result too large"}
		}
		if e < -calcMaxBinExp {
			return num{f: new(big.Float).SetPrec(calcPrec), digits: n.digits}, nil
		}
	}
	return n, nil
}

func newFloat() *big.Float { return new(big.Float).SetPrec(calcPrec) }

// arith applies a binary operator other than ^.
func arith(op token, a, b num) (num, error) {
	if a.isInt() && b.isInt() {
		x, y := a.i, b.i
		switch op.text {
		case "+":
			return checkInt(new(big.Int).Add(x, y), op)
		case "-":
			return checkInt(new(big.Int).Sub(x, y), op)
		case "*":
			if x.BitLen()+y.BitLen() > calcMaxBits+1 {
				return num{}, &CalcError{Pos: op.pos, Msg: fmt.Sprintf("result too large (over %d bits)", calcMaxBits)}
			}
			return checkInt(new(big.Int).Mul(x, y), op)
		case "/":
			if y.Sign() == 0 {
				return num{}, &CalcError{Pos: op.pos, Msg: "division by zero"}
			}
			q, r := new(big.Int).QuoRem(x, y, new(big.Int))
			if r.Sign() == 0 {
				return intNum(q), nil
			}
		case "%":
			if y.Sign() == 0 {
				return num{}, &CalcError{Pos: op.pos, Msg: "modulo by zero"}
			}
			return intNum(new(big.Int).Rem(x, y)), nil
		}
	}
	x, y := a.float(), b.float()
	digits := min(a.prec(), b.prec())
	z := newFloat()
	switch op.text {
	case "+":
		z.Add(x, y)
	case "-":
		z.Sub(x, y)
	case "*":
		z.Mul(x, y)
	case "/":
		if y.Sign() == 0 {
			return num{}, &CalcError{Pos: op.pos, Msg: "division by zero"}
		}
		z.Quo(x, y)
	case "%":
		if y.Sign() == 0 {
			return num{}, &CalcError{Pos: op.pos, Msg: "modulo by zero"}
		}
		q := newFloat().Quo(x, y)
		if q.MantExp(nil) > calcPrec {
			return num{}, &CalcError{Pos: op.pos, Msg: "modulo operands differ too much in size"}
		}
		t, _ := q.Int(nil) // truncates toward zero: the remainder has the dividend's sign
		z.Sub(x, newFloat().Mul(y, newFloat().SetInt(t)))
	}
	return checkFloat(num{f: z, digits: digits}, op)
}

// pow computes a^b.
func pow(op token, a, b num) (num, error) {
	if e, ok := b.asInt(); ok {
		return powInt(op, a, b, e)
	}
	// fractional exponent
	switch a.sign() {
	case -1:
		return num{}, &CalcError{Pos: op.pos, Msg: "a negative number raised to a fractional power is not a real number"}
	case 0:
		if b.sign() < 0 {
			return num{}, &CalcError{Pos: op.pos, Msg: "division by zero (0 raised to a negative power)"}
		}
		return intNum(new(big.Int)), nil
	}
	y, _ := b.float().Float64()
	v, err := expFloat(y * lnBig(a.float()))
	if err != nil {
		return num{}, &CalcError{Pos: op.pos, Msg: "power " + err.Error()}
	}
	return checkFloat(v, op)
}

func powInt(op token, a, b num, e *big.Int) (num, error) {
	tooLarge := &CalcError{Pos: op.pos, Msg: "result too large (exponent too big)"}
	if x, ok := a.asInt(); ok && a.isInt() {
		switch {
		case x.Sign() == 0:
			if e.Sign() < 0 {
				return num{}, &CalcError{Pos: op.pos, Msg: "division by zero (0 raised to a negative power)"}
			}
			if e.Sign() == 0 {
				return intNum(big.NewInt(1)), nil
			}
			return intNum(new(big.Int)), nil
		case x.CmpAbs(big.NewInt(1)) == 0:
			if x.Sign() < 0 && e.Bit(0) == 1 {
				return intNum(big.NewInt(-1)), nil
			}
			return intNum(big.NewInt(1)), nil
		case e.Sign() >= 0:
			if !e.IsInt64() || (int64(x.BitLen())-1)*e.Int64() > calcMaxBits {
				return num{}, tooLarge
			}
			return checkInt(new(big.Int).Exp(x, e, nil), op)
		}
	}
	// float base, or integer base with a negative exponent
	x := a.float()
	if x.Sign() == 0 {
		if e.Sign() < 0 {
			return num{}, &CalcError{Pos: op.pos, Msg: "division by zero (0 raised to a negative power)"}
		}
		if e.Sign() == 0 {
			return intNum(big.NewInt(1)), nil
		}
		return num{f: newFloat(), digits: a.prec()}, nil
	}
	if !e.IsInt64() {
		return num{}, tooLarge
	}
	n := e.Int64()
	if bits := lnBig(newFloat().Abs(x)) / math.Ln2 * float64(n); bits > calcMaxBinExp {
		return num{}, tooLarge
	} else if bits < -calcMaxBinExp {
		return num{f: newFloat(), digits: a.prec()}, nil // underflow
	}
	z := newFloat().SetInt64(1)
	base := newFloat().Set(x)
	for k := absInt64(n); k > 0; k >>= 1 {
		if k&1 == 1 {
			z.Mul(z, base)
		}
		if k > 1 {
			base.Mul(base, base)
		}
	}
	if n < 0 {
		z.Quo(newFloat().SetInt64(1), z)
	}
	return checkFloat(num{f: z, digits: a.prec()}, op)
}

func absInt64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func factorial(at token, v num) (num, error) {
	n, ok := v.asInt()
	if !ok {
		if v.isInt() || v.f.IsInt() {
			return num{}, &CalcError{Pos: at.pos, Msg: fmt.Sprintf("factorial argument too large (max %d)", calcMaxFactorial)}
		}
		return num{}, &CalcError{Pos: at.pos, Msg: "factorial needs a whole number"}
	}
	if n.Sign() < 0 {
		return num{}, &CalcError{Pos: at.pos, Msg: "factorial of a negative number is undefined"}
	}
	if n.Cmp(big.NewInt(calcMaxFactorial)) > 0 {
		return num{}, &CalcError{Pos: at.pos, Msg: fmt.Sprintf("factorial argument too large (max %d)", calcMaxFactorial)}
	}
	if n.Sign() == 0 {
		return intNum(big.NewInt(1)), nil
	}
	return checkInt(new(big.Int).MulRange(1, n.Int64()), at)
}

// lnBig is the natural log of a positive x of any size, as a float64.
func lnBig(x *big.Float) float64 {
	mant := newFloat()
	e := x.MantExp(mant)
	m, _ := mant.Float64()
	return math.Log(m) + float64(e)*math.Ln2
}

// expFloat computes e^y for any y whose result stays within the limits.
func expFloat(y float64) (num, error) {
	if math.IsNaN(y) {
		return num{}, errors.New("is undefined")
	}
	k := math.Floor(y / math.Ln2)
	if k > calcMaxBinExp || math.IsInf(y, 1) {
		return num{}, errors.New("result too large")
	}
	if k < -calcMaxBinExp {
		return num{f: newFloat(), digits: calcFloat64Dig}, nil
	}
	frac := math.Exp(y - k*math.Ln2) // in [1, 2)
	f := newFloat().SetFloat64(frac)
	return num{f: f.SetMantExp(f, int(k)), digits: calcFloat64Dig}, nil
}
