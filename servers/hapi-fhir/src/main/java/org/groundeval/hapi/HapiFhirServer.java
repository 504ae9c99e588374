package org.groundeval.hapi;

import ca.uhn.fhir.batch2.jobs.config.Batch2JobsConfig;
import ca.uhn.fhir.jpa.api.config.ThreadPoolFactoryConfig;
import ca.uhn.fhir.jpa.batch2.JpaBatch2Config;
import ca.uhn.fhir.jpa.config.r4.JpaR4Config;
import ca.uhn.fhir.jpa.subscription.channel.config.SubscriptionChannelConfig;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.autoconfigure.orm.jpa.HibernateJpaAutoConfiguration;
import org.springframework.boot.autoconfigure.thymeleaf.ThymeleafAutoConfiguration;
import org.springframework.context.annotation.Import;

/**
 * A HAPI FHIR JPA server for FHIR R4 over an in-memory H2 database, served at {@code /fhir}.
 *
 * <p>groundeval's tests use it as the real FHIR server behind the {@code --groundeval-fhir=URL}
 * mode and the conformance suite. It holds nothing between starts. The JPA beans come from
 * HAPI FHIR's own configuration classes ({@link JpaR4Config}, batch2 and its in-memory message channels for {@code $expunge}); this
 * application only supplies the database, the storage settings and the REST servlet
 * ({@link FhirServerConfig}).
 */
@SpringBootApplication(exclude = {HibernateJpaAutoConfiguration.class, ThymeleafAutoConfiguration.class})
@Import({
  JpaR4Config.class,
  JpaBatch2Config.class,
  Batch2JobsConfig.class,
  ThreadPoolFactoryConfig.class,
  SubscriptionChannelConfig.class,
  FhirServerConfig.class
})
public class HapiFhirServer {

  public static void main(String[] args) {
    SpringApplication.run(HapiFhirServer.class, args);
  }
}
