/** Why a release folder (or the file given to `release sign`) is not a live release; one line. */
export class ReleaseProblem extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "ReleaseProblem";
  }
}
