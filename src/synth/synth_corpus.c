/* synth_corpus.c - the English text the synthetic tokenizer is trained on,
 * and the chat template. Original prose written for this project; it only
 * has to be ordinary English (with a few digits, contractions and non-ASCII
 * letters) so that the learnt merges look like a real tokenizer's. */
#include "synth/synth_vocab.h"

static const char corpus[] =
    "The river comes down from the hills in the spring, when the snow melts and "
    "the streams fill with cold, clear water. Long ago the people of the valley "
    "built a sluice at the narrow place below the mill, where the banks are made "
    "of stone. A sluice is a simple thing: a channel, a gate that slides up and "
    "down, and a person who knows when to open it. When the gate is lifted, the "
    "water rushes through the channel and turns the wheel of the mill; when it is "
    "lowered, the water waits behind it and the pond grows deeper.\n\n"
    "The miller's daughter kept a notebook of the river. Every morning she wrote "
    "down the height of the water, the colour of the sky and the number of sacks "
    "of grain that were waiting to be ground. On the 3rd of April the water stood "
    "at 142 centimetres; on the 9th it had risen to 187, and she opened the gate "
    "twice before noon. She didn't trust the weather, and she wasn't wrong: the "
    "rain that followed lasted for eleven days, and the old bridge at the ford was "
    "nearly carried away.\n\n"
    "What matters about a sluice is not how much water it holds but how quickly it "
    "can let the right amount through. A gate that opens too slowly floods the "
    "fields; a gate that opens too quickly empties the pond and leaves the wheel "
    "standing still. The miller used to say that the whole art of the thing was "
    "to read the river before the river read you. He'd watch the foam on the "
    "surface, listen to the sound under the bridge, and decide. They're the kind of "
    "habits you learn only by standing next to the water for many years.\n\n"
    "In the evenings the family sat by the fire and talked about the day. The "
    "children asked questions: Why does the water never stop? Where does it go "
    "after the mill? Could we build a second wheel, a bigger one, and grind twice "
    "as much? Their father answered patiently. The water goes to the sea, he said, "
    "and the sea gives it back to the clouds, and the clouds give it back to the "
    "hills. Nothing is lost; it only moves from one place to another, and our work "
    "is to stand in the middle and make it useful while it passes.\n\n"
    "Years later, a café opened in the old mill house. Visitors came from the town "
    "to drink coffee, eat cake and look at the wheel, which still turned slowly "
    "although it no longer ground any grain. The owner kept the daughter's "
    "notebooks in a glass case by the door. On a cold morning in November, with the "
    "temperature at 4 °C and the river running high, a naïve visitor asked whether "
    "the gate still worked. The owner smiled, walked down to the channel, and lifted "
    "it by a hand's width. The water answered at once, louder and faster, and the "
    "wheel began to turn as it had turned a hundred years before.\n\n"
    "There is a lesson in this for anyone who builds machines. The best machines "
    "are the ones that do one thing well, that can be understood by the people "
    "who use them, and that keep working long after the people who made them are "
    "gone. They're patient, they're honest about what they can and cannot do, and "
    "they waste as little as possible. A good sluice is like that, and so is a good "
    "tool of any kind: a pen, a plough, a program. You'll know one when you see it, "
    "because it will feel as if it had always been there.\n";

const char *sl_synth_corpus(void) { return corpus; }

/* ChatML, the format Qwen models use: each message is
 * <|im_start|>{role}\n{content}<|im_end|>\n, and a generation prompt opens an
 * assistant turn. */
static const char chat_template[] =
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

const char *sl_synth_chat_template(void) { return chat_template; }
