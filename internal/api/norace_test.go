//go:build !race

package api_test

// heldDepthLimit is TestWaitingRequestStackStaysWithinEightKB's: 8 KB, less
// what net/http's server and the allocator's slow path take (5,071 bytes
// now).
const heldDepthLimit = 5120
