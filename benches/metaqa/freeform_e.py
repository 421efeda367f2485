#!/usr/bin/env python3
"""Free-form MetaQA questions, set E: a fifth, fresh hand-written phrase table
for testing a question planner on wording it was never tuned on.

    python3 benches/metaqa/freeform_e.py --kb $DATA/metaqa/kb.tsv \\
        --out benches/metaqa/freeform-e \\
        --avoid benches/metaqa/freeform/paths.tsv \\
        --avoid benches/metaqa/freeform-b/paths.tsv \\
        --avoid benches/metaqa/freeform-c/paths.tsv \\
        --avoid benches/metaqa/freeform-d/paths.tsv

PHRASES_E covers the same path types as freeform_d.py's PHRASES_D (every 1-hop
relation and inverse there, every 2-hop and 3-hop chain there), 6 phrasings
each, written the way real, varied people talk to a movie assistant: spoken,
informal questions, long and short, imperatives ("round up the acting talent
{e} has directed"), questions that put the topic at the end ("... - the film
is {e}"), questions with extra context ("my friend says ...", "for my thesis
..."), and questions that name the answer type with unusual nouns (leads,
players, wordsmiths, lingo, mother tongue, vintage, tag cloud, buzzwords,
pigeonhole, call sheet, costar party guest list), while the answers stay the
KB's values. No phrasing repeats, or is a mere word swap of, one in PHRASES,
PHRASES_B, PHRASES_C, PHRASES_D or MetaQA's own templates.

Outputs have the same formats as set D's: OUT/bracketed.txt (topic in
[brackets]), OUT/plain.txt (no brackets), both `question<TAB>answer|answer`,
and OUT/paths.tsv (hop, bracketed question, topic, gold chain); 50 questions
per hop. The command line, KB loading, sampling (round-robin over path types,
answers excluding the topic), writing and reading of --avoid files are set
C's (freeform_c.py's run). --avoid may be given more than once or
as a comma list (pass sets A's, B's, C's and D's paths.tsv, as above, to keep
the five sets' topics disjoint). Deterministic for a given KB, --seed and
--avoid files.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from freeform_c import run  # noqa: E402

# (path, phrasings); {e} is the topic entity.
PHRASES_E = [
    # 1-hop
    ("directed_by", [
        "my friend swears she knows who directed {e} - can you check who it really was?",
        "ok so who was the director on this one: {e}",
        "We're watching {e} tonight and nobody can remember who directed it. Help?",
        "Look up {e} and tell me whose name is on it as director.",
        "The person who directed it is what I'm after - the movie is {e}.",
        "who do we have to thank for directing {e}",
    ]),
    ("written_by", [
        "Who's the brains behind the script of {e}?",
        "My book club is discussing {e} next week; whose words were on the page before it was filmed?",
        "Writer credit check, please: {e}.",
        "I'm citing {e} in an essay and need the screenwriter's name.",
        "Find out who put {e} down on paper.",
        "who are the wordsmiths credited for {e}",
    ]),
    ("starred_actors", [
        "who were the leads in {e}",
        "my friend says she recognized half the cast of {e} - who are the actors?",
        "Run me through who's acting in {e}, would you?",
        "Who did they get to act in {e}?",
        "What's the lineup of players in {e}?",
        "The actors, please, for a film called {e}.",
    ]),
    ("has_genre", [
        "If {e} were on a streaming menu, which genre row would it show up in?",
        "My partner only likes certain genres - what genre is {e}, so I know whether to suggest it?",
        "Pin a genre on {e} for me.",
        "What pigeonhole does {e} go in? genre, I mean",
        "Genre check on a movie: {e}.",
        "Someone told me {e} is hard to categorize - what genre is it officially listed as?",
    ]),
    ("release_year", [
        "What vintage is {e}? I mean the year it came out.",
        "I'm trying to place {e} on a timeline - year of release?",
        "My dad insists he saw {e} in the cinema as a kid. What year did it actually come out?",
        "Dig up when {e} was released; the year is enough.",
        "Which year did it come out - the film {e}, I mean?",
        "For a trivia night: the year {e} hit the big screen?",
    ]),
    ("in_language", [
        "My grandma will only watch films in her mother tongue - which language is {e} in?",
        "Tell me the lingo of {e}.",
        "I'm learning languages through movies; which language would {e} let me practice?",
        "What language were the lines of {e} written and performed in?",
        "Quick one - the language of the film called {e}?",
        "Which language would a dubbing studio be translating {e} from?",
    ]),
    ("directed_by_inv", [
        "I just found out {e} is a director - what have they got to their name behind the camera?",
        "Give me the rundown on the films {e} directed.",
        "Which movies would I find if I searched for {e} as the director?",
        "My film class is studying {e} next term - which films of theirs as director should I watch beforehand?",
        "Everything this person has directed, please - the name's {e}.",
        "{e} directs? ok, what's come out of that",
    ]),
    ("written_by_inv", [
        "I heard {e} writes screenplays too - which films did that lead to?",
        "{e} wrote for the movies? which ones",
        "For my thesis on {e}, I need every film they have a script credit on.",
        "Which films were written, at least in part, by {e}?",
        "Films scripted by this person, please - the name is {e}.",
        "What's {e}'s track record as a screenwriter - which films?",
    ]),
    ("starred_actors_inv", [
        "Where do I know {e} from? list their movies",
        "My niece is obsessed with {e} - give me every movie with them acting in it so I can plan a marathon.",
        "What roles has {e} played? give me the film titles",
        "I keep mixing {e} up with another actor - which films were they actually in?",
        "Which movies is this actor in? {e}",
        "{e} - actor. Films?",
    ]),
    ("has_tags", [
        "What buzzwords get attached to {e}?",
        "Give me the tag cloud for {e}.",
        "What descriptors come up for {e}?",
        "I'm building a recommendation list and need {e}'s tags to match it against others.",
        "The tags on this one, please: {e}",
        "Which metadata tags is {e} marked with?",
    ]),
    ("has_tags_inv", [
        "My film club's theme this month is {e} - which movies are tagged with it?",
        "{e} as a tag - what movies does it point to?",
        "Which movies have users marked with the tag {e}?",
        "Films to look at if the keyword I care about is {e}?",
        "Is there anything tagged {e}? list the films",
        "Which movies have {e} somewhere in their tag list?",
    ]),
    # 2-hop
    ("directed_by -> directed_by_inv", [
        "My friend says the director of {e} made other films too - which ones?",
        "Which movies are {e}'s siblings, director-wise?",
        "Is {e} a one-off for its director, or did they make others? name them",
        "Recommend more films from the director who gave us {e}.",
        "Other films by the director of this one: {e}",
        "Whoever was behind the camera for {e}: show me the rest of their directing work.",
    ]),
    ("directed_by_inv -> directed_by", [
        "I read that {e} rarely directs solo - who do they direct alongside?",
        "Give me the other half of {e}'s directing duos.",
        "If {e} is one director on a film, who tends to be the other?",
        "Who completes the directing credit alongside {e}?",
        "Which other directors share directing credits with this person: {e}?",
        "When the credits say {e} 'and' someone, who's the someone? directors only",
    ]),
    ("directed_by_inv -> has_genre", [
        "What's {e}'s genre range as a director?",
        "My friend says {e} only ever directs one kind of film - which genres have their films actually been?",
        "Map out the genres {e} has tackled behind the camera.",
        "If I programmed a festival of {e}'s directing, which genre strands would it need?",
        "This director's films - what genres do they come in? The director is {e}.",
        "Is {e} a genre-hopper as a director? what genres",
    ]),
    ("directed_by_inv -> in_language", [
        "I'm in charge of subtitles for a season of {e}'s films as director; what languages will I be translating from?",
        "Which languages has {e} worked in from behind the camera?",
        "When {e} calls 'action', what language do the actors answer in?",
        "For the films this person directed, which languages are used? The person is {e}.",
        "Would I need to know other languages to watch everything {e} has directed? which ones",
        "{e} the director - languages of their films?",
    ]),
    ("directed_by_inv -> release_year", [
        "I'm making a poster of {e}'s films as director, with years - what years do I put?",
        "This director's films came out in which years? The director: {e}",
        "How recent are the films {e} directed? give the years they came out",
        "My friend says {e} stopped directing ages ago - which years did their films actually come out?",
        "Give me the year stamp on each film {e} directed.",
        "Which vintages are {e}'s directed films?",
    ]),
    ("directed_by_inv -> starred_actors", [
        "Who has {e} put in front of the camera?",
        "I'm casting a tribute to {e}; which actors from the films they directed should I invite?",
        "Who acts in stuff {e} directs?",
        "Round up the acting talent {e} has directed.",
        "Actors who've taken direction from this person, please - {e}.",
        "Whose performances did {e} direct?",
    ]),
    ("directed_by_inv -> written_by", [
        "Who hands {e} the screenplays they direct?",
        "Who does the writing for this director? Director: {e}.",
        "I love the dialogue in {e}'s films as director - who writes it?",
        "Who's on script duty when {e} directs?",
        "My friend thinks {e} only directs other people's scripts - whose scripts were they?",
        "For the movies {e} made as director, whose names go under 'screenplay'?",
    ]),
    ("starred_actors -> starred_actors_inv", [
        "Six degrees game: which films are one actor away from {e}?",
        "My friend says half the cast of {e} reunited in other films - which films have any of them been in?",
        "Give me films that borrow an actor from {e}.",
        "Which other movies have someone in them from this film's cast: {e}?",
        "Build me a watchlist from the other films of {e}'s cast.",
        "Anyone from {e} show up in other movies? which ones",
    ]),
    ("starred_actors_inv -> directed_by", [
        "Which directors have yelled 'cut' at {e} on set?",
        "My friend says {e} always works with the same director. Who has directed the films they acted in?",
        "I'm writing {e}'s bio; list the directors of every film they appeared in.",
        "Who's directed this actor before? Actor: {e}",
        "Who was in charge on set when {e} was acting?",
        "Which directors have had {e} on their call sheet?",
    ]),
    ("starred_actors_inv -> has_genre", [
        "Has {e} been typecast, or do their films span genres? which genres",
        "Which genres has {e}'s acting career wandered through?",
        "My sister wants to watch something with {e} but hates certain genres; which genres do their films come in?",
        "Genre breakdown of everything {e} acted in.",
        "Which genres show up across this actor's films? It's {e}.",
        "Which genres would a fan of {e} the actor end up watching?",
    ]),
    ("starred_actors_inv -> in_language", [
        "Which languages has {e} had to deliver lines in on film?",
        "I'm practicing my listening; which languages are {e}'s movies in?",
        "Tongues spoken in the movies this actor appears in: {e}",
        "Does {e} stick to one language on screen? list the languages of their films",
        "What lingo are the films with {e} in them?",
        "My cousin says {e} acts in a bunch of different languages - which ones?",
    ]),
    ("starred_actors_inv -> release_year", [
        "How long has {e} been around? give me the years of their films",
        "I'm making a {e} calendar: which years had a movie with them in it?",
        "My friend claims {e} hasn't worked in years - what years were their films released?",
        "Vintages of the movies featuring this actor: {e}",
        "Pull up the years on all of {e}'s movies.",
        "From first to last, what years were {e}'s films released?",
    ]),
    ("starred_actors_inv -> starred_actors", [
        "Who has {e} swapped lines with on screen?",
        "My friend says {e} has worked with half of Hollywood - who have they actually shared a cast with?",
        "If {e} threw a party for everyone they've acted with, who'd be on the guest list?",
        "Other performers from the films this actor was in: {e}",
        "Who did {e} work with in front of the camera?",
        "Who has {e} crossed paths with on a film set? actors only",
    ]),
    ("starred_actors_inv -> written_by", [
        "Whose dialogue has {e} had to learn?",
        "My friend says {e} picks roles for the writing - which screenwriters wrote their films?",
        "Who penned the movies with this actor in them: {e}?",
        "Which screenwriters can count {e} among their films' actors?",
        "Who was on the writing team for the films {e} acted in?",
        "If {e} thanked their screenwriters in a speech, whose names would they list?",
    ]),
    ("written_by -> written_by_inv", [
        "My friend says the writer of {e} only ever wrote that one film. Is that true? which other films did they write",
        "Other screen credits for the writer of {e}?",
        "Is {e} its writer's only film? if not, which others",
        "Other movies by the person who wrote this one: {e}",
        "I'm reading the script of {e}; which other produced films did its writer have?",
        "Dig into the writer of {e} and find me their other movies.",
    ]),
    ("written_by_inv -> directed_by", [
        "Which directors has {e} handed scripts to?",
        "My friend says {e} only writes for one director - which directors actually made their films?",
        "Directors who worked from this writer's screenplays: {e}",
        "For each {e} screenplay that became a movie, name the director.",
        "The director credit on movies {e} wrote went to whom?",
        "{e} writes, somebody else directs - who are those somebodies?",
    ]),
    ("written_by_inv -> has_genre", [
        "{e} is my favorite screenwriter - which genres have their films been?",
        "Genre spread of the films {e} wrote?",
        "Which genres would a shelf of {e}'s scripts cover?",
        "I'm pitching {e} as a writer for a project - what genres have they written before?",
        "What kinds of films, by genre, came from this writer - {e}?",
        "My friend thinks {e} only writes one kind of story - which genres are their films really?",
    ]),
    ("written_by_inv -> in_language", [
        "A translator asks: which languages are {e}'s scripted films in?",
        "Does {e} write for audiences in more than one language? which languages are their films in",
        "The tongue of each film this writer wrote: {e}",
        "Lingo check on the films {e} wrote.",
        "My friend says {e} writes foreign-language films - which languages are their films actually in?",
        "When {e}'s scripts hit the screen, what language are the characters talking?",
    ]),
    ("written_by_inv -> release_year", [
        "My friend says {e} was only active in one era - which years did their written films come out?",
        "Give me the vintages of the films {e} wrote.",
        "How long has {e} been writing for the screen? years of their films please",
        "Release years for this writer's films, please: {e}",
        "In which years did a film {e} wrote land in cinemas?",
        "Put together a chronology of {e}'s writing credits - which years?",
    ]),
    ("written_by_inv -> starred_actors", [
        "My friend says {e} writes parts for the same few actors - who acted in their films?",
        "This writer's films - who's in them? Writer: {e}",
        "If {e} held a table read for every script they've had filmed, which actors would show up?",
        "Which stars ended up in movies {e} had a hand in writing?",
        "Who has acted from {e}'s pages?",
        "Run me the acting roster for the films {e} wrote.",
    ]),
    ("written_by_inv -> written_by", [
        "{e} never writes alone, I heard - who are the other names on their scripts?",
        "Which writers has {e} sat in a writers' room with?",
        "Who has {e} traded drafts with?",
        "Who else held the pen on {e}'s films?",
        "Which other writers are on this person's writing credits? The person is {e}.",
        "My friend says {e} always writes as part of a duo - who has been the other half?",
    ]),
    # 3-hop
    ("directed_by -> directed_by_inv -> has_genre", [
        "My friend loved {e} and wants more from that director, but only in genres she likes. What genres are that director's other films?",
        "Genre rundown of the other films from {e}'s director.",
        "Which genres did the person who directed it also work in elsewhere - the film is {e}?",
        "Does {e}'s director stick to the same genre in their other films? which genres are they",
        "What pigeonholes, genre-wise, do the other movies by {e}'s director fit into?",
        "I want to explore whoever made {e} further - which genres are their other films from?",
    ]),
    ("directed_by -> directed_by_inv -> in_language", [
        "My friend wants to watch more films by the director of {e}, but only with subtitles she can read - what languages are that director's other films in?",
        "Lingo of the other films by the person who directed {e}?",
        "Did the director of {e} make their other films in the same language? which languages are they",
        "Their other films, what languages? I mean the director of {e}.",
        "If a festival screened every other film by {e}'s director, which languages would be on the program?",
        "Dubbing job: the other films of {e}'s director - source languages?",
    ]),
    ("directed_by -> directed_by_inv -> release_year", [
        "When else has the director of {e} put out a film? years please",
        "My friend thinks {e}'s director retired right after it - what years were their other films released?",
        "Vintages of the other films from {e}'s director?",
        "Chronology check: other releases by the director of {e}, by year.",
        "Give me release years for that director's other work - I mean whoever directed {e}.",
        "Was {e} an early or late film for its director? list the years of their other films",
    ]),
    ("directed_by -> directed_by_inv -> starred_actors", [
        "My friend says the director of {e} always uses the same actors - who acted in that director's other films?",
        "Give me the acting talent from the other films of whoever directed {e}.",
        "Who was on the call sheet for the other films made by {e}'s director?",
        "Actors in the director's other films, please - the film I mean is {e}.",
        "Once I'm done with {e}, I want the director's other movies - who stars in them?",
        "Who has worked in front of the camera for {e}'s director on another film?",
    ]),
    ("directed_by -> directed_by_inv -> written_by", [
        "My friend says {e}'s director always works with the same writer. Who wrote that director's other films?",
        "Who's been on script duty for the other films by the director of {e}?",
        "Writers of the director's other films, please - the film in question is {e}.",
        "Once I know who directed {e}, who wrote the rest of that director's movies?",
        "If {e}'s director thanked the writers of their other films, which names would they mention?",
        "Who were the wordsmiths on everything else {e}'s director made?",
    ]),
    ("starred_actors -> starred_actors_inv -> directed_by", [
        "My friend says the cast of {e} all went on to work with big-name directors - which directors made the other films they acted in?",
        "Who directed the movies that are one actor away from {e}?",
        "Who has yelled 'cut' at {e}'s actors on other sets?",
        "Directors of other films with someone from this one's cast: {e}",
        "Pick up where {e} leaves off: its actors made other films - who directed them?",
        "Which directors have had {e}'s cast members on their call sheets elsewhere?",
    ]),
    ("starred_actors -> starred_actors_inv -> has_genre", [
        "My friend liked the actors in {e}; what genres are the other movies they've been in?",
        "Genre mix of the other films starring {e}'s actors?",
        "What genres are the films that borrow an actor from {e}?",
        "What genres do {e}'s actors dabble in outside of it?",
        "Which genres does this film's cast turn up in elsewhere? The film: {e}",
        "Do {e}'s actors tend to do one genre elsewhere, or lots? name the genres of their other films",
    ]),
    ("starred_actors -> starred_actors_inv -> in_language", [
        "My friend wants to follow {e}'s cast into their other films, but needs to know the languages first - which are they?",
        "Lingo of the other films {e}'s performers appear in?",
        "What languages do the films one actor away from {e} use?",
        "Other movies with actors from this film - what languages? Film: {e}",
        "If I chase down the actors of {e} in their other films, what languages will I be listening to?",
        "A subtitler needs the source languages of the other films {e}'s actors appear in.",
    ]),
    ("starred_actors -> starred_actors_inv -> release_year", [
        "My friend says the cast of {e} were all newcomers - what years did their other films come out?",
        "Vintages of films one actor away from {e}?",
        "Years on the other movies starring anyone from this cast: {e}",
        "Chronology of the other movies {e}'s performers appear in - which years?",
        "Were {e}'s actors busy before and after it? give the release years of their other films",
        "Pull the release years for the other films of {e}'s cast.",
    ]),
    ("starred_actors -> starred_actors_inv -> written_by", [
        "My friend says the cast of {e} are picky about scripts - who wrote the other films they appeared in?",
        "Whose dialogue have {e}'s actors had to learn in other movies?",
        "Writers of the films one actor away from {e}?",
        "Who wrote the other movies this cast has been in? The cast of {e}, I mean.",
        "Who was on script duty for the other films of {e}'s actors?",
        "If I look past {e} at the rest of its actors' movies, whose screenplays are those?",
    ]),
    ("written_by -> written_by_inv -> directed_by", [
        "My friend says {e}'s writer only trusts one director - who directed that writer's other films?",
        "Which directors have been handed other scripts by {e}'s writer?",
        "Who directed the writer's other films? The writer I mean is whoever wrote {e}.",
        "Once I know who wrote {e}, who directed the rest of that writer's films?",
        "Who called 'action' on the other movies penned by {e}'s screenwriter?",
        "The writer of {e} had other scripts made - who got the director credit on those?",
    ]),
    ("written_by -> written_by_inv -> has_genre", [
        "My friend claims {e}'s screenwriter always sticks to one genre - what genres are their other films, really?",
        "Genre spread of the other scripts by {e}'s writer?",
        "Which shelves, genre-wise, do the other films from {e}'s writer sit on?",
        "Other films by the writer of this one - genres? It's {e}.",
        "I'd like more from whoever scripted {e}; what genres are their other films?",
        "Was {e} typical for its writer? list the genres of the writer's other films",
    ]),
    ("written_by -> written_by_inv -> in_language", [
        "My friend wants more of {e}'s writer on screen but only watches certain languages - what languages are that writer's other films in?",
        "Lingo of the other films by {e}'s screenwriter?",
        "Did the writer of {e} stay in the same language for their other films? which languages are those in",
        "Whoever wrote this film had other scripts filmed - in what languages? Film: {e}.",
        "When {e}'s writer had other scripts filmed, what language were the characters speaking?",
        "Translation job: other films from {e}'s writer, what languages are they in?",
    ]),
    ("written_by -> written_by_inv -> release_year", [
        "My friend says the writer of {e} vanished after it - which years did their other films come out?",
        "Vintages of the other films by {e}'s screenwriter?",
        "Was {e} early or late in its writer's career? give the years of their other films",
        "This film's writer - when did their other films come out, year-wise? The film: {e}",
        "Chronology of the other scripts {e}'s writer got made - which years?",
        "Once I know who wrote {e}, when did that writer's other films come out? years only",
    ]),
    ("written_by -> written_by_inv -> starred_actors", [
        "My friend says {e}'s writer writes for the same actors every time - who acted in that writer's other films?",
        "Who has acted from the pages of {e}'s writer in other films?",
        "Table read for every other script by the writer of {e}: which actors show up?",
        "The writer of this one wrote others; who acted in those? It's {e}.",
        "Who was on the call sheet for the other films {e}'s screenwriter wrote?",
        "After {e}, I want more from its writer - who's acting in their other films?",
    ]),
]


def main():
    run(PHRASES_E, "freeform_e.py", __doc__)

if __name__ == "__main__":
    main()
