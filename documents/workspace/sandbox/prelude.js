// The sandbox's prelude: run once in every runtime before the program, it
// takes away what a program must not have and puts a size check in front
// of each built-in that would allocate, loop or recurse in Go beyond the
// limits in one step, where the interpreter cannot interrupt it.
(function (g, maxString, maxLength, maxDepth, jsonDepth, write, overLimit) {
	"use strict";
	const apply = Reflect.apply, defineProperty = Object.defineProperty, names = Object.getOwnPropertyNames,
		getProto = Object.getPrototypeOf, isArray = Array.isArray, str = String, floor = Math.floor,
		stringify = JSON.stringify, RangeErr = RangeError, TypeErr = TypeError, MapC = Map,
		FP = Function.prototype, mapGet = Map.prototype.get, mapSet = Map.prototype.set, SetC = Set, setHas = Set.prototype.has, setAdd = Set.prototype.add;

	// tooBig stops the program, as the watchdog does when the heap grows
	// too much: the interruption takes effect at the next instruction, the
	// throw makes sure the built-in does not run first.
	function tooBig(what) {
		overLimit(what);
		throw new RangeErr(what + " would exceed the sandbox's memory limit");
	}
	function len(v) {
		const n = +v;
		return n > 0 ? floor(n) : 0;
	}
	function lengthOf(o) {
		return o == null ? 0 : len(Object(o).length);
	}
	function set(obj, name, value) {
		defineProperty(obj, name, { value: value, writable: true, configurable: true, enumerable: false });
	}
	function wrap(obj, name, check) {
		const orig = obj[name];
		if (typeof orig !== "function") {
			return;
		}
		set(obj, name, { [name](...args) { check(this, args); return apply(orig, this, args); } }[name]);
	}
	// arrayDepth throws a RangeError when a is nested deeper than
	// maxDepth; it walks with a stack of its own, not by recursion, so
	// that it is the depth, not the call stack, that it runs out of.
	function arrayDepth(a) {
		const todo = [a], depths = [1];
		for (let n = 1; n > 0;) {
			n--;
			const x = todo[n], d = depths[n];
			if (d > maxDepth) {
				throw new RangeErr("an array nested deeper than " + maxDepth + " is not flattened in the sandbox");
			}
			for (let i = 0; i < x.length; i++) {
				if (isArray(x[i])) {
					todo[n] = x[i];
					depths[n] = d + 1;
					n++;
				}
			}
		}
	}

	// No code from strings: the parser recurses in Go, and eval would
	// bypass the checks made on the program's source.
	function noCodegen() {
		throw new TypeErr("code generation from strings is not available in the sandbox");
	}
	noCodegen.prototype = FP; // so that instanceof Function holds
	set(g, "eval", noCodegen);
	set(g, "Function", noCodegen);
	for (const f of [function () {}, function* () {}, async function () {}]) {
		set(getProto(f), "constructor", noCodegen);
	}
	// Constructors that allocate their whole size in one step, and BigInt,
	// whose operators (** and <<) do too.
	for (const name of ["ArrayBuffer", "SharedArrayBuffer", "DataView", "Int8Array", "Uint8Array",
		"Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array", "Uint32Array", "Float16Array",
		"Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array", "BigInt", "Atomics", "WeakRef",
		"FinalizationRegistry"]) {
		delete g[name];
	}

	const AP = Array.prototype;
	for (const name of names(AP)) {
		if (name !== "constructor") {
			wrap(AP, name, function (self) {
				if (lengthOf(self) > maxLength) {
					tooBig("an array of " + lengthOf(self) + " elements");
				}
			});
		}
	}
	wrap(AP, "join", function (self, args) {
		const sep = args[0] === undefined ? 1 : str(args[0]).length;
		if ((lengthOf(self) - 1) * sep > maxString) {
			tooBig("joining " + lengthOf(self) + " elements");
		}
	});
	wrap(AP, "concat", function (self, args) {
		let n = lengthOf(self);
		for (let i = 0; i < args.length; i++) {
			n += isArray(args[i]) ? args[i].length : 1;
		}
		if (n > maxLength) {
			tooBig("an array of " + n + " elements");
		}
	});
	for (const name of ["flat", "flatMap"]) {
		wrap(AP, name, function (self, args) {
			if (name === "flat" && args[0] !== undefined && +args[0] > maxDepth && isArray(self)) {
				arrayDepth(self);
			}
		});
	}
	// Spread, destructuring, Set, Map and Promise.all iterate an array in
	// Go, from 0 to its length even when it is sparse.
	defineProperty(AP, Symbol.iterator, { value: AP.values, writable: true, configurable: true, enumerable: false });
	const SI = String.prototype[Symbol.iterator];
	defineProperty(String.prototype, Symbol.iterator, {
		value: { [Symbol.iterator]() {
			if (str(this).length > maxLength) {
				tooBig("iterating a string of " + str(this).length + " characters");
			}
			return apply(SI, this, []);
		} }[Symbol.iterator], writable: true, configurable: true, enumerable: false,
	});
	// Each step of an array's or a string's iterator goes through the
	// interpreter, so that an iteration that escapes the checks above
	// (arguments[Symbol.iterator] is the unchecked values, and cannot be
	// changed) still meets the time limit and the heap's watchdog.
	for (const it of [[].values(), ""[Symbol.iterator]()]) {
		const proto = getProto(it), next = proto.next;
		set(proto, "next", function next_() { return apply(next, this, []); });
		defineProperty(proto.next, "name", { value: "next" });
	}
	// An argument list is made in Go from the array-like's length.
	function argumentList(i) {
		return function (_, args) {
			if (lengthOf(args[i]) > maxLength) {
				tooBig("an argument list of " + lengthOf(args[i]) + " elements");
			}
		};
	}
	wrap(FP, "apply", argumentList(1));
	wrap(Reflect, "apply", argumentList(2));
	wrap(Reflect, "construct", argumentList(1));
	// A string's characters become as many properties in one step.
	const strValueOf = String.prototype.valueOf;
	function stringLength(v) {
		if (typeof v === "string") {
			return v.length;
		}
		if (typeof v !== "object" || v === null) {
			return 0;
		}
		try {
			return apply(strValueOf, v, []).length; // a String object's
		} catch (e) {
			return 0;
		}
	}
	function characters(first) {
		return function (_, args) {
			for (let i = first; i < args.length; i++) {
				if (stringLength(args[i]) > maxLength) {
					tooBig("the properties of a string of " + stringLength(args[i]) + " characters");
				}
			}
		};
	}
	// The compiled program passes what an object spread or an object rest
	// copies through this first (see treeCheck in sandbox.go).
	defineProperty(g, "#spread", {
		value: function (v) {
			if (stringLength(v) > maxLength) {
				tooBig("the properties of a string of " + stringLength(v) + " characters");
			}
			return v;
		}, writable: false, configurable: false, enumerable: false,
	});
	for (const name of ["keys", "values", "entries", "getOwnPropertyNames", "getOwnPropertyDescriptors"]) {
		wrap(Object, name, characters(0));
	}
	wrap(Object, "assign", characters(1));
	wrap(Reflect, "ownKeys", characters(0));
	wrap(Array, "from", function (_, args) {
		if (lengthOf(args[0]) > maxLength) {
			tooBig("an array of " + lengthOf(args[0]) + " elements");
		}
	});

	const SP = String.prototype;
	wrap(SP, "repeat", function (self, args) {
		if (str(self).length * len(args[0]) > maxString) {
			tooBig("a string of " + str(self).length * len(args[0]) + " characters");
		}
	});
	for (const name of ["padStart", "padEnd"]) {
		wrap(SP, name, function (_, args) {
			if (len(args[0]) > maxString) {
				tooBig("a string of " + len(args[0]) + " characters");
			}
		});
	}
	for (const name of ["replace", "replaceAll"]) {
		wrap(SP, name, function (self, args) {
			if (typeof args[1] === "function") {
				return; // the replacer runs in the interpreter, which checks
			}
			const s = str(self).length, r = str(args[1]);
			const once = name === "replace" && (typeof args[0] === "string" || (args[0] instanceof RegExp && !args[0].global));
			const matches = once ? 1 : s + 1;
			// $& and $n add at most the text once over all matches; $` and $'
			// add up to the whole text per match.
			let dollars = 0, whole = false;
			for (let i = 0; i < r.length; i++) {
				if (r[i] === "$") {
					dollars++;
					whole = whole || r[i + 1] === "`" || r[i + 1] === "'";
				}
			}
			const bound = whole ? matches * r.length * (s + 1) : matches * r.length + dollars * s + s;
			if (bound > maxString) {
				tooBig("replacing in a string of " + s + " characters");
			}
		});
	}
	wrap(SP, "split", function (self, args) {
		const s = str(self).length, sep = args[0];
		const n = typeof sep === "string" && sep.length > 0 ? floor(s / sep.length) + 1 : s + 1;
		if (n > maxLength && (args[1] === undefined || len(args[1]) > maxLength)) {
			tooBig("splitting a string of " + s + " characters");
		}
	});

	// JSON recurses in Go: parse takes no text nested deeper than maxDepth
	// (counted in Go before it starts), stringify no value (after toJSON
	// and the caller's replacer, as stringify itself sees them).
	const JP = JSON.parse;
	set(JSON, "parse", function parse(text, reviver) {
		const t = str(text);
		if (jsonDepth(t) > maxDepth) {
			throw new RangeErr("JSON nested deeper than " + maxDepth + " is not parsed in the sandbox");
		}
		return apply(JP, JSON, arguments.length > 1 ? [t, reviver] : [t]);
	});
	function guardedStringify(value, replacer, space) {
		const depth = new MapC();
		let allow = null;
		if (isArray(replacer)) {
			allow = new SetC();
			for (let i = 0; i < replacer.length; i++) {
				apply(setAdd, allow, [str(replacer[i])]);
			}
		}
		let root = true;
		function track(key, v) {
			if (root) {
				root = false;
			} else if (allow !== null && !isArray(this) && !apply(setHas, allow, [key])) {
				return undefined;
			}
			if (typeof replacer === "function") {
				v = apply(replacer, this, [key, v]);
			}
			if (v !== null && typeof v === "object") {
				const d = (apply(mapGet, depth, [this]) || 0) + 1;
				if (d > maxDepth) {
					throw new RangeErr("a value nested deeper than " + maxDepth + " is not stringified in the sandbox");
				}
				apply(mapSet, depth, [v, d]);
			}
			return v;
		}
		return stringify(value, track, space);
	}
	set(JSON, "stringify", function stringify(value, replacer, space) {
		return guardedStringify(value, replacer, space);
	});

	// show is how console.log and the final value render a value.
	function show(v) {
		if (typeof v === "string") {
			return v;
		}
		if (typeof v === "function") {
			return "[Function" + (v.name ? ": " + v.name : "") + "]";
		}
		if (v !== null && typeof v === "object" && !(v instanceof Error)) {
			try {
				const s = guardedStringify(v);
				if (s !== undefined) {
					return s;
				}
			} catch (e) {
				if (e instanceof RangeErr) {
					throw e;
				}
			}
		}
		return str(v);
	}
	function log(...args) {
		write(args.map(show).join(" ") + "\n");
	}
	const console = {};
	for (const name of ["log", "info", "warn", "error", "debug"]) {
		set(console, name, log);
	}
	set(g, "console", console);
	return show;
})
