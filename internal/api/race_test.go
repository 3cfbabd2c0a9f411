//go:build race

package api_test

// heldDepthLimit is TestWaitingRequestStackStaysWithinEightKB's under the
// race detector, whose instrumented frames are larger: what is there now
// (7,232 bytes) and no more (288 bytes more, chatRoute's frame with the
// stream's arguments inlined, fails).
const heldDepthLimit = 7300
