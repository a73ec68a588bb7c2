// sdk_check.cjs - the reporting helpers of the client-library tests
// (serve_sdk.cjs, serve_compat_sdk.cjs): "ok NAME" / "FAIL NAME: why" lines
// the shell tests count, a step that turns a thrown error into a FAIL, and
// the error an awaited call raises.
'use strict';

// Prints "ok   NAME", or "FAIL NAME: why" (why as JSON, cut to 600 chars).
function check(name, cond, why) {
    console.log((cond ? 'ok   ' : 'FAIL ') + name + (cond ? '' : ': ' + String(JSON.stringify(why)).slice(0, 600)));
}

// Awaits fn(); an error it throws is a FAIL named name, with its stack.
async function step(name, fn) {
    try {
        await fn();
    } catch (e) {
        check(name, false, String(e && e.stack || e));
    }
}

// The error an awaited call raises: [status, message, class name]
// ([null, null, null] when it succeeds).
async function failure(p) {
    try {
        await p;
    } catch (e) {
        return [e.status, String(e.message), e.constructor && e.constructor.name];
    }
    return [null, null, null];
}

module.exports = { check, step, failure };
