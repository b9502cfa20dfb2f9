/** A mutating call a fence refused: the method, the path, and where it resolved. A test fails with it as a defect. */
export class FenceViolation extends Error {
  override readonly name = "FenceViolation"
}
