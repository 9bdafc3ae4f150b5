// Package sandbox runs JavaScript for the agent, in-process, in goja (a
// pure-Go ECMAScript interpreter), under limits: wall time, memory and
// output. A program sees the language and its standard built-ins, a
// console whose log is captured, and — when a [Files] is given — a small
// file API over the agent's workspace; nothing else: no network, no host
// filesystem, no processes, no timers, no require or import, no eval, no
// BigInt and no typed arrays.
//
// How each limit holds:
//   - Wall time and cancellation: a watchdog interrupts the interpreter
//     when the time limit passes or the run's context ends; goja checks
//     the interruption between instructions, so a loop stops mid-way.
//   - Recursion: the interpreter's call stack is capped (MaxCallDepth);
//     going deeper stops the program with ErrCallDepth.
//   - Memory: goja has no per-runtime memory accounting, so the limit is
//     kept in two ways. The watchdog samples the process' heap every
//     millisecond and stops the program when the heap has grown by more
//     than the limit over its lowest point since the run began: a
//     conservative bound, since other work of the process counts too, and
//     a loose one by what one instruction allocates before the next look
//     (a concatenation makes a string twice the largest the program
//     holds). And the built-ins that would allocate or loop in Go, where
//     no interruption reaches them, beyond the limit in one step — repeat,
//     padStart, padEnd, split, replace and replaceAll with a string
//     replacement, Array.from, every Array.prototype method over a length
//     beyond the limit, iterating an array or a string (spread,
//     destructuring, Set, Promise.all), apply and Reflect's apply and
//     construct over a long argument list, Object.keys and its kin over a
//     long string, JSON over values nested deeper than MaxDepth — refuse
//     first: a size beyond the memory limit stops the program with
//     ErrMemoryLimit, a nesting beyond MaxDepth is a RangeError the
//     program may catch. Typed arrays and ArrayBuffer, whose constructors
//     allocate in one step, are not offered, nor BigInt, whose ** and <<
//     do, nor eval and new Function, whose parser recurses in Go.
//     Each step of an array's or a string's iterator runs through the
//     interpreter, so an iteration the checks miss (arguments' iterator
//     is the unchecked one) still meets the time limit and the watchdog.
//     Syntax that turns a string into properties in one step is
//     rewritten to pass the value through the same check first: an
//     object spread ({...s}) and an object rest given by an expression
//     (const {...r} = s); an object rest no expression gives (in a
//     parameter, a loop's head, nested in a pattern) is refused.
//   - Parsing and compiling, which no limit of a run covers: a program
//     longer than MaxSource, with brackets nested deeper than MaxNesting,
//     with more than a thousand arrow functions or with a syntax tree
//     deeper than two thousand nodes is refused (ErrSource) before it is
//     compiled, since goja takes time that grows with the square of
//     these, and Go stack with their depth.
//   - Regular expressions: a pattern Go's regexp cannot run goes to
//     regexp2, which backtracks; a match that takes more than a second
//     ends as a failed match (goja reads regexp2's timeout so), not as an
//     error. A run may so pass its time limit by up to that second.
//   - Output: console output and the final value are each capped; output
//     past the cap stops the program with ErrOutputLimit, the output so
//     far kept.
//
// The programs run on the caller's goroutine and nothing outlives
// [Run]: the watchdog is stopped before it returns.
//
// The run_code tool ([Tool]) gets its [Files] per call from a [FilesFor]:
// package workspace gives the call's conversation's files. It runs at most
// Limits.Concurrent programs at once (half the CPUs by default): a
// program that loops to its time limit keeps a CPU busy that whole time,
// and the memory watchdog reads the heap that programs running together
// share. A call waits for a slot at most the time limit, then fails with
// ErrBusy.
package sandbox
