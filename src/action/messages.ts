/**
 * The core's messages name what a `cudaenv` user types (--mirror, CUDAENV_MIRROR, the cudnnMirror
 * setting); in a workflow the same things are the step's inputs. Applied to the text of an error
 * before it becomes the step's ::error:: annotation.
 */
const TERMS: Array<[RegExp, string]> = [
  [/--mirror(?:,| \/) CUDAENV_MIRROR/g, 'the mirror input'],
  [/\(setting cudnnMirror, CUDAENV_CUDNN_MIRROR\)/g, '(the cudnn-mirror input)'],
  [/CUDAENV_CUDNN_MIRROR/g, 'the cudnn-mirror input'],
  [/CUDAENV_MIRROR/g, 'the mirror input'],
  [/Example: --(mirror|cudnn|components|profile) /g, 'Example: $1: '],
  [/another --cudnn spec/g, 'another cudnn input'],
  [/--(mirror|cudnn|components|profile)\b/g, 'the $1 input'],
];

export function inActionTerms(text: string): string {
  return TERMS.reduce((t, [re, to]) => t.replace(re, to), text);
}
