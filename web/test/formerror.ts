// What the form tests share: the `FormError` a form's parsing throws.
import { FormError } from '../src/runfmt';

/** The `FormError` `f` throws, or a failure when it throws none. */
export function formError(f: () => unknown): FormError {
  try {
    f();
  } catch (err) {
    if (err instanceof FormError) return err;
    throw err;
  }
  throw new Error('no FormError thrown');
}
